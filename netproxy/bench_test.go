package netproxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// benchSize is the size of one transfer: the target is stated for
// 1 GiB.
const benchSize = 1 << 30

// BenchmarkThroughput downloads benchSize bytes from a local server,
// directly and through bridge and proxy (CONNECT), and reports MB/s.
func BenchmarkThroughput(b *testing.B) {
	block := make([]byte, 256<<10)
	source := serveTCP(b, "tcp", "127.0.0.1:0", func(c *net.TCPConn) {
		var n [8]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		for left := binary.BigEndian.Uint64(n[:]); left > 0; {
			k := min(left, uint64(len(block)))
			if _, err := c.Write(block[:k]); err != nil {
				return
			}
			left -= k
		}
		c.CloseWrite()
	})
	target := "example.test:" + strconv.Itoa(source.port())
	download := func(b *testing.B, c net.Conn, r io.Reader) {
		defer c.Close()
		c.Write(binary.BigEndian.AppendUint64(nil, benchSize))
		buf := make([]byte, 256<<10)
		var n int64
		for {
			k, err := r.Read(buf)
			n += int64(k)
			if err != nil {
				break
			}
		}
		if n != benchSize {
			b.Fatalf("got %d bytes, want %d", n, benchSize)
		}
	}
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(benchSize)
		for b.Loop() {
			c, err := net.Dial("tcp", source.ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			download(b, c, c)
		}
	})
	b.Run("proxy", func(b *testing.B) {
		box := startBox(b, []string{"example.test"}, nil, boxOptions{})
		b.SetBytes(benchSize)
		for b.Loop() {
			c, br, resp := connectVia(b, box.addr, target)
			if resp.StatusCode != 200 {
				b.Fatalf("CONNECT status %d", resp.StatusCode)
			}
			download(b, c, br)
		}
	})
}

// BenchmarkConnect measures one connection with a one-byte round trip to an
// echo server: directly, and through bridge and proxy by CONNECT and by
// SOCKS5 (name resolved by the proxy). The difference is what the proxy adds
// per connection.
func BenchmarkConnect(b *testing.B) {
	srv := serveTCP(b, "tcp", "127.0.0.1:0", echo)
	port := srv.port()
	target := "example.test:" + strconv.Itoa(port)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			c, err := net.Dial("tcp", srv.ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			roundTrip(b, c, c, "x")
			c.Close()
		}
	})
	box := startBox(b, []string{"example.test"}, nil, boxOptions{})
	b.Run("connect", func(b *testing.B) {
		for b.Loop() {
			c, br, resp := connectVia(b, box.addr, target)
			if resp.StatusCode != 200 {
				b.Fatalf("CONNECT status %d", resp.StatusCode)
			}
			roundTrip(b, c, br, "x")
			c.Close()
		}
	})
	b.Run("socks5", func(b *testing.B) {
		for b.Loop() {
			c, br, code := socksVia(b, box.addr, socksName("example.test"), port)
			if code != socksOK {
				b.Fatalf("SOCKS5 reply %#x", code)
			}
			roundTrip(b, c, br, "x")
			c.Close()
		}
	})
}

// BenchmarkTLS compares a TLS connection to a host the proxy tunnels with
// one it intercepts (a secret goes to it): the transfer of benchSize bytes
// in one answer (MB/s), and one connection with one small request and
// answer. Both use the same origin and the same client.
func BenchmarkTLS(b *testing.B) {
	roots, cert := originCA(b, "api.test", "example.test")
	block := make([]byte, 256<<10)
	srv := serveTCP(b, "tcp4", "127.0.0.1:0", func(c *net.TCPConn) {
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}})
		defer tc.Close()
		br := bufio.NewReader(tc)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if req.URL.Path != "/big" {
				io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				continue
			}
			fmt.Fprintf(tc, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", benchSize)
			for left := benchSize; left > 0; left -= len(block) {
				if _, err := tc.Write(block[:min(left, len(block))]); err != nil {
					return
				}
			}
		}
	})
	port := strconv.Itoa(srv.port())
	ca, err := NewAuthority([]string{"api.test"})
	if err != nil {
		b.Fatal(err)
	}
	box := startBox(b, []string{"api.test", "example.test"}, nil, boxOptions{ca: ca, roots: roots,
		secrets: []Secret{{Name: "K", Value: testKey, Placeholder: testPlaceholder, Hosts: []string{"api.test"}}}})
	dial := func(b *testing.B, host string, pool *x509.CertPool) (*tls.Conn, *bufio.Reader) {
		c, br, resp := connectVia(b, box.addr, host+":"+port)
		if resp.StatusCode != 200 {
			b.Fatalf("CONNECT %s: %s", host, resp.Status)
		}
		tc := tls.Client(&bufferedConn{Conn: c, r: br}, &tls.Config{ServerName: host, RootCAs: pool})
		return tc, bufio.NewReaderSize(tc, 256<<10)
	}
	get := func(b *testing.B, tc *tls.Conn, br *bufio.Reader, path string) int64 {
		fmt.Fprintf(tc, "GET %s HTTP/1.1\r\nHost: x\r\nX-Api-Key: %s\r\n\r\n", path, testPlaceholder)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return n
	}
	for _, tc := range []struct {
		name, host string
		pool       *x509.CertPool
	}{{"tunnelled", "example.test", roots}, {"intercepted", "api.test", ca.Pool()}} {
		b.Run("throughput/"+tc.name, func(b *testing.B) {
			b.SetBytes(benchSize)
			for b.Loop() {
				c, br := dial(b, tc.host, tc.pool)
				if n := get(b, c, br, "/big"); n != benchSize {
					b.Fatalf("got %d bytes", n)
				}
				c.Close()
			}
		})
		b.Run("connection/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				c, br := dial(b, tc.host, tc.pool)
				get(b, c, br, "/small")
				c.Close()
			}
		})
	}
}
