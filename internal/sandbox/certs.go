package sandbox

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

// PKI holds the paths of the sandbox's certificates and keys.
type PKI struct {
	CACert, CAKey           string
	ServingCert, ServingKey string
	AdminCert, AdminKey     string
	SAKey, SAPub            string
}

type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// GeneratePKI writes a fresh CA, an apiserver serving certificate for
// loopback, an admin client certificate (system:masters) and a
// service-account signing key into dir. Nothing is reused between runs.
func GeneratePKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	p := &PKI{
		CACert: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "apiserver.crt"), ServingKey: filepath.Join(dir, "apiserver.key"),
		AdminCert: filepath.Join(dir, "admin.crt"), AdminKey: filepath.Join(dir, "admin.key"),
		SAKey: filepath.Join(dir, "sa.key"), SAPub: filepath.Join(dir, "sa.pub"),
	}
	now := time.Now().Add(-time.Hour)
	ca, err := newCert(nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "bootstrap-sandbox-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
	})
	if err != nil {
		return nil, err
	}
	serving, err := newCert(ca, servingTemplate("kube-apiserver",
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		"127.0.0.1", "10.0.0.1"))
	if err != nil {
		return nil, err
	}
	admin, err := newCert(ca, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "sandbox-admin", Organization: []string{"system:masters"}},
		NotBefore:   now,
		NotAfter:    now.Add(10 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, err
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: service-account key: %w", err)
	}
	for _, w := range []struct {
		path string
		kp   *keyPair
	}{{p.CACert, ca}, {p.ServingCert, serving}, {p.AdminCert, admin}} {
		if err := writePEM(w.path, "CERTIFICATE", w.kp.cert.Raw); err != nil {
			return nil, err
		}
	}
	for _, w := range []struct {
		path string
		key  *ecdsa.PrivateKey
	}{{p.CAKey, ca.key}, {p.ServingKey, serving.key}, {p.AdminKey, admin.key}, {p.SAKey, sa}} {
		if err := writeECKey(w.path, w.key); err != nil {
			return nil, err
		}
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := writePEM(p.SAPub, "PUBLIC KEY", pub); err != nil {
		return nil, err
	}
	return p, nil
}

func newCert(parent *keyPair, tmpl *x509.Certificate) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: key for %s: %w", tmpl.Subject.CommonName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("pki: serial: %w", err)
	}
	tmpl.SerialNumber = serial
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, fmt.Errorf("pki: sign %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parse %s: %w", tmpl.Subject.CommonName, err)
	}
	return &keyPair{cert: cert, key: key}, nil
}

func writePEM(path, typ string, der []byte) error {
	b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	return nil
}

// IssueServing signs a loopback serving certificate for name with the
// sandbox CA and writes it as <name>.crt and <name>.key into the PKI's
// directory: components beside the API server (the chart registry) are
// trusted through the same CA a cluster's sources are given.
func (p *PKI) IssueServing(name string) (certFile, keyFile string, err error) {
	ca, err := loadKeyPair(p.CACert, p.CAKey)
	if err != nil {
		return "", "", err
	}
	kp, err := newCert(ca, servingTemplate(name, []string{"localhost"}, "127.0.0.1"))
	if err != nil {
		return "", "", err
	}
	dir := filepath.Dir(p.CACert)
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := writePEM(certFile, "CERTIFICATE", kp.cert.Raw); err != nil {
		return "", "", err
	}
	if err := writeECKey(keyFile, kp.key); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// servingTemplate is a loopback serving certificate's template, valid from
// an hour ago for ten days.
func servingTemplate(cn string, dns []string, ips ...string) *x509.Certificate {
	now := time.Now().Add(-time.Hour)
	t := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		NotBefore:   now,
		NotAfter:    now.Add(10 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dns,
	}
	for _, ip := range ips {
		t.IPAddresses = append(t.IPAddresses, net.ParseIP(ip))
	}
	return t
}

func writeECKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

func loadKeyPair(certFile, keyFile string) (*keyPair, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("pki: load %s: %w", certFile, err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("pki: parse %s: %w", certFile, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("pki: %s is not an ECDSA key", keyFile)
	}
	return &keyPair{cert: cert, key: key}, nil
}
