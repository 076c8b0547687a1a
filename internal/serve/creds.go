package serve

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Username is the basic-auth user name of every served repository; the
// password is a random token made for the run.
const Username = "bootstrap"

// Credentials are what one served source is protected with: a CA made for
// the run, the server's certificate for the advertised host signed by it,
// and the basic-auth token. Never logged, never on argv: they travel to the
// serving process on its stdin and to the cluster in a Secret.
type Credentials struct {
	CAPEM   []byte `json:"caPEM"`
	CertPEM []byte `json:"certPEM"`
	KeyPEM  []byte `json:"keyPEM"`
	Token   string `json:"token"`
}

// NewCredentials makes a CA and a server certificate whose subject
// alternative name is host (an IP address or a DNS name), valid for
// validFor, and a 256-bit token.
func NewCredentials(host string, validFor time.Duration) (*Credentials, error) {
	now := time.Now().Add(-5 * time.Minute)
	end := now.Add(validFor + time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("serve: CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "bootstrap serve CA"},
		NotBefore:             now,
		NotAfter:              end,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("serve: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("serve: server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now,
		NotAfter:     end,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("serve: server certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("serve: token: %w", err)
	}
	return &Credentials{
		CAPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		Token:   base64.RawURLEncoding.EncodeToString(tok),
	}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

// TLSConfig is the server side of the credentials.
func (c *Credentials) TLSConfig() (*tls.Config, error) {
	pair, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("serve: server key pair: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// ClientTLS trusts only the run's CA (for the probe of a started server).
func (c *Credentials) ClientTLS() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CAPEM)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// SecretName is the Secret in the Flux namespace that holds a served
// source's credentials in the keys source-controller reads.
const SecretName = "bootstrap-serve-auth"

// SecretLabel marks that Secret as this tool's: cutover deletes a temporary
// Secret only when it carries it.
const SecretLabel = "bootstrap.homelab-ops.github.io/temporary-source"

// Secret is the GitRepository's spec.secretRef while it is served from
// here: username, password and ca.crt, as source-controller reads them.
func (c *Credentials) Secret(namespace string) (*unstructured.Unstructured, error) {
	s := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: SecretName, Labels: map[string]string{SecretLabel: "serve"}},
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			"username": []byte(Username),
			"password": []byte(c.Token),
			"ca.crt":   c.CAPEM,
		},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
