//go:build !wasip1

package wasihttp

import "net/http"

func (t *Transport) roundTrip(req *http.Request) (*http.Response, error) {
	return nil, &Error{Kind: Protocol, Method: req.Method, URL: req.URL.String(), Detail: "no Herald host: natively, install the test host with heraldtest.New(t)"}
}
