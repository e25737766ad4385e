package topology

import (
	"errors"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

var hostRE = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_.-]*)$`)

// addressProblem says what is wrong with a bootstrap entry and how to fix
// it, or returns "" for a usable host:port. The text never repeats a part
// of the entry: the entry may come from a ${VAR}, and the caller quotes it
// whole (see expansions.scrub).
func addressProblem(addr string) string {
	const example = "write it as host:port, e.g. kafka-1:9092"
	if strings.TrimSpace(addr) == "" {
		return "is empty; " + example
	}
	if strings.Contains(addr, "://") {
		return "has a scheme; " + example + " (the protocol comes from the tls and sasl settings)"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		switch {
		case errors.As(err, &ae) && ae.Err == "missing port in address":
			return "has no port; " + example
		case errors.As(err, &ae) && ae.Err == "too many colons in address":
			return "is not host:port; " + example + ", and an IPv6 address in brackets: [::1]:9092"
		case errors.As(err, &ae):
			return "is not host:port (" + ae.Err + "); " + example
		}
		return "is not host:port; " + example
	}
	if host == "" {
		return "has no host; " + example
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "has no valid port (a number from 1 to 65535); " + example
	}
	if _, err := netip.ParseAddr(host); err != nil && !hostRE.MatchString(host) {
		return "has a host name with characters a host name cannot hold (letters, digits, '.', '-', '_'); " + example
	}
	return ""
}

// addressKey is a bootstrap address in a form in which two spellings of
// one broker compare equal (host case, a trailing dot, leading zeros).
func addressKey(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n)
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.ToLower(host), "."), port)
}
