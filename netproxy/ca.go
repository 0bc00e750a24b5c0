package netproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// Authority is a run's own certificate authority: the proxy terminates the
// TLS of the hosts it reads requests for (to put a secret in, or to check
// a method and path) with certificates it signs, and the box trusts it
// because its bundle says so (the backend binds it over the system's
// bundle and names it in SSL_CERT_FILE and the like). Only the box trusts
// it, and only for this run: its private key is made in agentbox's memory
// when the run starts, never written anywhere, never passed to the box,
// and gone when agentbox exits (agentbox is not dumpable, so no other
// process, the box's included, can read it from memory).
//
// It is also restricted to the hosts it is for: its name constraints
// permit only the intercepted names (and their subdomains) and addresses,
// so a client that checks them refuses any other certificate it signed.
type Authority struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey // the authority's
	leafKey *ecdsa.PrivateKey // every host certificate's

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// Validity: the authority outlives any run it is made for; a host's
// certificate is remade when less than a day of it is left.
const (
	caValidity   = 366 * 24 * time.Hour
	leafValidity = 30 * 24 * time.Hour
)

// NewAuthority makes a run's authority for the host entries of hosts (the
// intercepted ones: names, "*.domain", addresses, with optional ports).
func NewAuthority(hosts []string) (*Authority, error) {
	var names []string
	var ips []*net.IPNet
	for _, e := range hosts {
		r, err := compileRule(e)
		if err != nil {
			return nil, fmt.Errorf("intercepted host %q: %w", e, err)
		}
		switch {
		case r.addr.IsValid():
			bits := r.addr.BitLen()
			ips = append(ips, &net.IPNet{IP: r.addr.AsSlice(), Mask: net.CIDRMask(bits, bits)})
		default:
			// "example.com" permits it and every subdomain (RFC 5280
			// section 4.2.1.10), for "*.example.com" too.
			names = append(names, r.name)
		}
	}
	// An empty list would leave that kind unconstrained: permit only
	// what cannot be a real host.
	if len(names) == 0 {
		names = []string{"invalid"} // RFC 6761
	}
	if len(ips) == 0 {
		ips = []*net.IPNet{{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(32, 32)}, {IP: net.IPv6unspecified, Mask: net.CIDRMask(128, 128)}}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:                serial(),
		Subject:                     pkix.Name{CommonName: "agentbox per-run authority " + now.UTC().Format("2006-01-02T15:04:05Z")},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(caValidity),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLen:                  0,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         names,
		PermittedIPRanges:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("making the run's certificate authority: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Authority{cert: cert, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{},
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// CertPEM is the authority's certificate, for the box's bundle.
func (a *Authority) CertPEM() []byte { return append([]byte(nil), a.certPEM...) }

// Pool is a pool with the authority alone, for tests.
func (a *Authority) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.cert)
	return p
}

// leaf returns the certificate for h, made on first use.
func (a *Authority) leaf(h host) (*tls.Certificate, error) {
	name := h.String()
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.leaves[name]; ok && time.Until(c.Leaf.NotAfter) > 24*time.Hour {
		return c, nil
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if h.addr.IsValid() {
		// No common name: OpenSSL reads one that looks like a host name
		// as a DNS name, which the authority's constraints do not permit.
		tmpl.IPAddresses = []net.IP{h.addr.AsSlice()}
	} else {
		tmpl.Subject = pkix.Name{CommonName: h.name}
		tmpl.DNSNames = []string{h.name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &a.leafKey.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("signing a certificate for %s: %w", name, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: a.leafKey, Leaf: leaf}
	a.leaves[name] = c
	return c, nil
}

// serial draws a certificate's serial number: 128 random bits.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		panic(errors.New("crypto/rand failed: " + err.Error()))
	}
	return n
}
