package agekey

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// SecretObject is the Secret kustomize-controller imports the identities
// from: one data key, age.agekey, holding the canonical identity file.
func SecretObject(namespace, name string, ids *Identities) (*unstructured.Unstructured, error) {
	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "bootstrap"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{DataKey: ids.SecretData()},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", namespace, name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// SecretIdentities parses every *.agekey data key of a Secret, as
// kustomize-controller imports them. keys lists those data keys.
func SecretIdentities(s *corev1.Secret) (ids *Identities, keys []string, err error) {
	ref := s.Namespace + "/" + s.Name
	for k := range s.Data {
		if filepath.Ext(k) == ".agekey" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		var all []string
		for k := range s.Data {
			all = append(all, k)
		}
		sort.Strings(all)
		return nil, nil, fmt.Errorf("Secret %s has no data key ending in .agekey (data keys: %s): kustomize-controller imports age identities only from *.agekey keys; re-install it with bootstrap age-key --rotate", ref, orNone(all))
	}
	ids = &Identities{Source: fmt.Sprintf("Secret %s", ref)}
	for _, k := range keys {
		one, err := Parse(s.Data[k], fmt.Sprintf("Secret %s data key %s", ref, k))
		if err != nil {
			return nil, keys, fmt.Errorf("%w (re-install it with bootstrap age-key --rotate)", err)
		}
		ids.Keys = append(ids.Keys, one.Keys...)
	}
	return ids, keys, nil
}

// InstallOptions say where the Secret goes and what is allowed.
type InstallOptions struct {
	Namespace, Name string
	// Rotate allows replacing a Secret that holds different identities.
	Rotate bool
}

// InstallSecret applies the Secret with server-side apply, refusing to replace
// different identities without Rotate, then reads it back. changed is true
// when the cluster was modified.
func InstallSecret(ctx context.Context, c client.Client, rm *ssa.ResourceManager, ids *Identities, o InstallOptions) (checks []verify.Check, changed bool, err error) {
	ref := o.Namespace + "/" + o.Name
	var live corev1.Secret
	getErr := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, &live)
	var stale []string // other .agekey keys a rotation removes
	switch {
	case apierrors.IsNotFound(getErr):
	case getErr != nil:
		return nil, false, fmt.Errorf("read Secret %s: %w", ref, getErr)
	default:
		rot := GateRotation.New()
		old, keys, perr := SecretIdentities(&live)
		for _, k := range keys {
			if k != DataKey {
				stale = append(stale, k)
			}
		}
		switch {
		case perr == nil && old.SameKeys(ids):
			rot.Verdict, rot.Message = verify.Pass, fmt.Sprintf("Secret %s already holds these identities (%s)", ref, strings.Join(ids.Recipients(), ", "))
			stale = nil
		case !o.Rotate:
			what := "different age identities (" + safeRecipients(old) + ")"
			if perr != nil {
				what = "data this tool cannot parse as age identities"
			}
			rot.Verdict = verify.Fail
			rot.Message = fmt.Sprintf("Secret %s already holds %s; replacing it changes the key every Kustomization decrypts with: pass --rotate to replace it with %s", ref, what, strings.Join(ids.Recipients(), ", "))
			return append(checks, rot), false, nil
		default:
			rot.Verdict = verify.Pass
			rot.Message = fmt.Sprintf("--rotate: Secret %s's identities (%s) are replaced with %s", ref, safeRecipients(old), strings.Join(ids.Recipients(), ", "))
		}
		checks = append(checks, rot)
	}

	obj, err := SecretObject(o.Namespace, o.Name, ids)
	if err != nil {
		return checks, false, err
	}
	entry, err := apply.Object(ctx, rm, obj)
	if err != nil {
		return checks, false, fmt.Errorf("server-side apply of Secret %s: %w", ref, err)
	}
	changed = entry.Action != ssa.UnchangedAction
	if len(stale) > 0 {
		var ops []map[string]string
		for _, k := range stale {
			ops = append(ops, map[string]string{"op": "remove", "path": "/data/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)})
		}
		patch, _ := json.Marshal(ops)
		if err := c.Patch(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}}, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			return checks, changed, fmt.Errorf("--rotate: remove the old data keys %s from Secret %s: %w", strings.Join(stale, ", "), ref, err)
		}
		changed = true
	}
	applied := GateSecretApplied.Pass(fmt.Sprintf("Secret %s %s (server-side apply, field manager bootstrap)", ref, entry.Action),
		fmt.Sprintf("data key %s: %d identit%s, recipients %s", DataKey, len(ids.Keys), plural(len(ids.Keys), "y", "ies"), strings.Join(ids.Recipients(), ", ")))
	if len(stale) > 0 {
		applied.Evidence = append(applied.Evidence, "removed the old data keys "+strings.Join(stale, ", "))
	}
	checks = append(checks, applied)
	return checks, changed, nil
}

func safeRecipients(ids *Identities) string {
	if ids == nil {
		return "unparseable"
	}
	return strings.Join(ids.Recipients(), ", ")
}

// ReadSecret reads the Secret back and checks that it parses; want, when
// set, must be exactly its identities. ids is nil when the check did not pass.
func ReadSecret(ctx context.Context, c client.Reader, namespace, name string, want *Identities) (verify.Check, *Identities) {
	ref := namespace + "/" + name
	ck := GateSecret.New()
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			ck.Verdict, ck.Message = verify.Fail, fmt.Sprintf("Secret %s not found: install it with `bootstrap age-key --age-key-file - --path clusters/<env>` (key on stdin)", ref)
			return ck, nil
		}
		ck.Verdict, ck.Message = verify.Skip, fmt.Sprintf("could not read Secret %s: %v", ref, err)
		return ck, nil
	}
	ids, keys, err := SecretIdentities(&s)
	if err != nil {
		ck.Verdict, ck.Message = verify.Fail, err.Error()
		return ck, nil
	}
	ck.Evidence = append(ck.Evidence, "data keys: "+strings.Join(keys, ", "), "resourceVersion "+s.ResourceVersion)
	for _, k := range ids.Keys {
		ck.Evidence = append(ck.Evidence, fmt.Sprintf("%s identity, recipient %s", k.Type, k.Recipient))
	}
	if want != nil && !want.SameKeys(ids) {
		ck.Verdict, ck.Message = verify.Fail, fmt.Sprintf("Secret %s holds %s, not the installed %s: something else writes it", ref, safeRecipients(ids), strings.Join(want.Recipients(), ", "))
		return ck, nil
	}
	ck.Verdict, ck.Message = verify.Pass, fmt.Sprintf("Secret %s holds %d age identit%s in %s", ref, len(ids.Keys), plural(len(ids.Keys), "y", "ies"), strings.Join(keys, ", "))
	return ck, ids
}
