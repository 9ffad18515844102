package netproxy

import (
	"io"
	"net"
	"sync"
)

// splice copies ar (a's reader, which may hold bytes a already sent) to b
// and b to a until both directions end, then closes both.
func splice(a net.Conn, ar io.Reader, b net.Conn) {
	var wg sync.WaitGroup
	wg.Go(func() { pipe(a, b, b) })
	pipe(b, ar, a)
	wg.Wait()
	a.Close()
	b.Close()
}

// pipe copies src to dst. At src's end it closes dst for writing only, so
// that the peer sees the end while the other direction goes on (a client
// that half-closes still gets its answer); after an error it closes both
// connections, which ends the other direction too.
func pipe(dst net.Conn, src io.Reader, srcConn net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		srcConn.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	dst.Close()
}

// countConn counts the bytes written to and read from a connection. In a
// splice each counter has one writer, and splice returns only after both.
type countConn struct {
	net.Conn
	up, down int64
}

func (c *countConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.up += int64(n)
	return n, err
}

func (c *countConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.down += int64(n)
	return n, err
}

// CloseWrite half-closes the connection when it can, and closes it
// otherwise.
func (c *countConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
