package netproxy

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// target is where a proxy request asks to go, in canonical form.
type target struct {
	host string
	port int
	ip   bool
}

func (t target) String() string { return net.JoinHostPort(t.host, fmt.Sprint(t.port)) }

// readRequest reads one proxy request: CONNECT host:port, or a request
// whose target is an absolute http:// URL. It returns the request, when
// one was read, with an error when it is not a proxy request.
func readRequest(br *bufio.Reader) (*http.Request, target, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, target{}, err
	}
	var host string
	port := 80
	if req.Method == http.MethodConnect {
		host, port, err = splitHostPort(req.RequestURI)
	} else {
		host, err = absoluteHTTP(req)
		if err == nil && req.URL.Port() != "" {
			port, err = parsePort(req.URL.Port())
		}
	}
	if err != nil {
		return req, target{}, err
	}
	h, ip, err := canonHost(host)
	if err != nil {
		return req, target{}, err
	}
	return req, target{host: h, port: port, ip: ip}, nil
}

// absoluteHTTP checks that req is a proxied plain HTTP request and returns
// its host.
func absoluteHTTP(req *http.Request) (string, error) {
	switch {
	case req.URL.Scheme == "" && strings.HasPrefix(req.RequestURI, "/"):
		return "", errors.New("not a proxy request: a client should send an absolute URL (http://host/path) or CONNECT host:port")
	case req.URL.Scheme != "http":
		return "", fmt.Errorf("the proxy forwards only http:// URLs; use CONNECT for %s://", bounded(req.URL.Scheme))
	case req.URL.Hostname() == "":
		return "", errors.New("the URL has no host")
	}
	return req.URL.Hostname(), nil
}
