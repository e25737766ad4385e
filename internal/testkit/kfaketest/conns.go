package kfaketest

import (
	"encoding/binary"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Conns counts the TCP connections kfake brokers accept, by listen
// address and by the client id of each connection's first request, so a
// test can tell the connections of the code under test from those of a
// mirror it runs beside (give the mirror its own client id). Use Opt as a
// ClusterOpt of every cluster it watches.
type Conns struct {
	mu       sync.Mutex
	byAddr   map[string]int
	byClient map[string]int
}

// NewConns returns an empty counter.
func NewConns() *Conns { return &Conns{byAddr: map[string]int{}, byClient: map[string]int{}} }

// Opt makes a cluster's listeners count into c.
func (c *Conns) Opt() kfake.Opt {
	return kfake.ListenFn(func(network, addr string) (net.Listener, error) {
		l, err := net.Listen(network, addr)
		if err != nil {
			return nil, err
		}
		return countingListener{l, c}, nil
	})
}

// ByAddr returns, for each list of listen addresses, the connections
// accepted on them so far.
func (c *Conns) ByAddr(addrs ...[]string) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, len(addrs))
	for i, as := range addrs {
		for _, a := range as {
			out[i] += c.byAddr[a]
		}
	}
	return out
}

// ByClient returns the connections so far whose first request named
// clientID ("" for a connection that sent no request).
func (c *Conns) ByClient(clientID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byClient[clientID]
}

type countingListener struct {
	net.Listener
	c *Conns
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return conn, err
	}
	l.c.mu.Lock()
	l.c.byAddr[l.Addr().String()]++
	l.c.mu.Unlock()
	return &peekConn{Conn: conn, c: l.c}, nil
}

// peekConn reads the client id from the header of the first request: size
// (4 bytes), api key (2), version (2), correlation id (4), client id (a
// 2-byte length and its bytes).
type peekConn struct {
	net.Conn
	c    *Conns
	head []byte
	done bool
}

func (p *peekConn) Read(b []byte) (int, error) {
	n, err := p.Conn.Read(b)
	if !p.done && n > 0 {
		p.head = append(p.head, b[:n]...)
		if len(p.head) >= 14 {
			idLen := max(0, int(int16(binary.BigEndian.Uint16(p.head[12:14]))))
			if len(p.head) >= 14+idLen {
				p.record(string(p.head[14 : 14+idLen]))
			}
		}
	}
	if err != nil && !p.done {
		p.record("")
	}
	return n, err
}

func (p *peekConn) record(id string) {
	p.done, p.head = true, nil
	p.c.mu.Lock()
	p.c.byClient[id]++
	p.c.mu.Unlock()
}
