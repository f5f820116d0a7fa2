module {{name}}

go 1.26.0

require herald.dev/sdk/go v0.0.0

// The SDK from a Herald checkout, as a Rust plugin's path dependency.
replace herald.dev/sdk/go => {{sdk}}
