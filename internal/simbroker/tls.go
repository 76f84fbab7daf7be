package simbroker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the broker's throw-away certificate authority and its one server
// certificate (SANs 127.0.0.1, ::1, localhost), generated at Start.
type pki struct {
	caPEM  []byte
	pool   *x509.CertPool
	server tls.Certificate
	dir    string // temp dir holding ca.pem; removed on Close
	caFile string
}

func newPKI() (*pki, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("simbroker: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "simbroker test CA", Organization: []string{"brokerpath simbroker"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("simbroker: CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("simbroker: parse CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("simbroker: server key: %w", err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("simbroker: server certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(leafDER)
	if err != nil {
		return nil, fmt.Errorf("simbroker: parse server certificate: %w", err)
	}
	p := &pki{
		caPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pool:   x509.NewCertPool(),
		server: tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key, Leaf: leaf},
	}
	p.pool.AddCert(caCert)
	dir, err := os.MkdirTemp("", "simbroker-")
	if err != nil {
		return nil, fmt.Errorf("simbroker: temp dir for CA: %w", err)
	}
	p.dir = dir
	p.caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(p.caFile, p.caPEM, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("simbroker: write CA file: %w", err)
	}
	return p, nil
}

// serverTLS returns the TLS config for one server.
func (p *pki) serverTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
}

func (p *pki) close() error { return os.RemoveAll(p.dir) }

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
