package agekey

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/cmd/sops/common"
	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/version"
)

// keyServer is a sops key service that knows only the identities it was
// given. Unlike sops' default local server it never reads SOPS_AGE_KEY,
// key files or any other key source, so a test-decrypt proves exactly what
// the Secret will hold.
type keyServer struct {
	ids sopsage.ParsedIdentities
}

func (s keyServer) Decrypt(_ context.Context, req *keyservice.DecryptRequest) (*keyservice.DecryptResponse, error) {
	k, ok := req.Key.KeyType.(*keyservice.Key_AgeKey)
	if !ok {
		return nil, fmt.Errorf("not an age key: bootstrap test-decrypts with the age identities given to it only")
	}
	mk := &sopsage.MasterKey{Recipient: k.AgeKey.Recipient, EncryptedKey: string(req.Ciphertext)}
	s.ids.ApplyToMasterKey(mk)
	plain, err := mk.Decrypt()
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

func (s keyServer) Encrypt(context.Context, *keyservice.EncryptRequest) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("bootstrap's key service does not encrypt")
}

func (ids *Identities) keyServices() []keyservice.KeyServiceClient {
	return []keyservice.KeyServiceClient{keyservice.NewCustomLocalClient(keyServer{ids: ids.ageIdentities()})}
}

// sopsFormat is the sops store format for a file, by extension; ok is
// false for files sops would treat as binary, which a Kustomization never
// decrypts as manifests.
func sopsFormat(path string) (formats.Format, bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return formats.Yaml, true
	case ".json":
		return formats.Json, true
	case ".env":
		return formats.Dotenv, true
	case ".ini":
		return formats.Ini, true
	}
	return formats.Binary, false
}

// loadEncrypted parses a SOPS file. ok is false when data is not
// SOPS-encrypted at all.
func loadEncrypted(data []byte, format formats.Format) (tree *sops.Tree, ok bool, err error) {
	defer func() {
		// Malformed input has made sops panic before; treat it as an error.
		if r := recover(); r != nil {
			tree, ok, err = nil, true, fmt.Errorf("sops cannot parse it: %v", r)
		}
	}()
	store := common.StoreForFormat(format, config.NewStoresConfig())
	t, err := store.LoadEncryptedFile(data)
	if errors.Is(err, sops.MetadataNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return &t, true, nil
}

// ageRecipients lists the age recipients in a file's SOPS metadata, and
// counts its master keys of other types.
func ageRecipients(tree *sops.Tree) (recipients []string, others int) {
	for _, g := range tree.Metadata.KeyGroups {
		for _, k := range g {
			if ak, ok := k.(*sopsage.MasterKey); ok {
				recipients = append(recipients, ak.Recipient)
			} else {
				others++
			}
		}
	}
	return recipients, others
}

// testDecrypt parses the encrypted file and decrypts it in memory with
// only ids, checking its MAC, as kustomize-controller does. The plaintext
// tree is dropped on return.
func (ids *Identities) testDecrypt(data []byte, format formats.Format) error {
	_, err := ids.decrypt(data, format)
	return err
}

// DecryptJSON decrypts one SOPS-encrypted object written as JSON with only
// ids, checking its MAC, and returns it as plain JSON: what
// kustomize-controller v1.9.5 applies for a SOPS-encrypted Secret it builds
// (internal/decryptor, DecryptResource: the resource marshalled to JSON,
// SopsDecryptWithFormat(data, formats.Json, formats.Json), unmarshalled
// back). The one decryption path of the tool; its errors never hold a
// value.
func (ids *Identities) DecryptJSON(data []byte) ([]byte, error) {
	tree, err := ids.decrypt(data, formats.Json)
	if err != nil {
		return nil, err
	}
	return common.StoreForFormat(formats.Json, config.NewStoresConfig()).EmitPlainFile(tree.Branches)
}

// DecryptYAML decrypts one SOPS-encrypted YAML document with only ids,
// checking its MAC, in the order its keys are written (as `sops --decrypt`
// reads a file), and returns it as plain YAML: for objects given to the
// tool (--supply), not built by kustomize.
func (ids *Identities) DecryptYAML(data []byte) ([]byte, error) {
	tree, err := ids.decrypt(data, formats.Yaml)
	if err != nil {
		return nil, err
	}
	return common.StoreForFormat(formats.Yaml, config.NewStoresConfig()).EmitPlainFile(tree.Branches)
}

// decrypt parses and decrypts data in memory with only ids.
func (ids *Identities) decrypt(data []byte, format formats.Format) (out *sops.Tree, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("sops failed while decrypting: %v", r)
		}
	}()
	tree, ok, err := loadEncrypted(data, format)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("no sops metadata")
	}
	_, err = common.DecryptTree(common.DecryptTreeOpts{
		Tree:            tree,
		KeyServices:     ids.keyServices(),
		DecryptionOrder: []string{sopsage.KeyTypeIdentifier},
		Cipher:          aes.NewCipher(),
	})
	if err != nil {
		var ue sops.UserError
		if errors.As(err, &ue) {
			return nil, errors.New(strings.TrimSpace(ue.UserError()))
		}
		return nil, err
	}
	return tree, nil
}

// EncryptOptions shape Encrypt's output.
type EncryptOptions struct {
	// EncryptedRegex selects the keys to encrypt, as sops'
	// --encrypted-regex; Flux's docs use ^(data|stringData)$ for Secrets.
	EncryptedRegex string
}

// Encrypt encrypts plain (YAML, JSON, dotenv or ini, chosen by name's
// extension) to the age recipients with sops, in memory. It needs public
// keys only; the tests and fixtures use it to build repositories.
func Encrypt(name string, plain []byte, recipients []string, opts EncryptOptions) ([]byte, error) {
	format, ok := sopsFormat(name)
	if !ok {
		return nil, fmt.Errorf("%s: sops format not supported here: use .yaml, .json, .env or .ini", name)
	}
	store := common.StoreForFormat(format, config.NewStoresConfig())
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var group sops.KeyGroup
	for _, r := range recipients {
		mk, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, fmt.Errorf("recipient %q: %w", r, err)
		}
		group = append(group, mk)
	}
	tree := sops.Tree{
		Branches: branches,
		Metadata: sops.Metadata{
			KeyGroups:      []sops.KeyGroup{group},
			EncryptedRegex: opts.EncryptedRegex,
			Version:        version.Version,
		},
	}
	dataKey := make([]byte, 32)
	if _, err := rand.Read(dataKey); err != nil {
		return nil, err
	}
	for _, k := range group {
		if err := k.Encrypt(dataKey); err != nil {
			return nil, err
		}
	}
	if err := common.EncryptTree(common.EncryptTreeOpts{Tree: &tree, Cipher: aes.NewCipher(), DataKey: dataKey}); err != nil {
		return nil, err
	}
	return store.EmitEncryptedFile(tree)
}

func sopsVersion() string { return version.Version }
