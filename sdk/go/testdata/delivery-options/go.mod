module herald.dev/sdk/go/testdata/delivery-options

go 1.26.0

require herald.dev/sdk/go v0.0.0

replace herald.dev/sdk/go => ../..
