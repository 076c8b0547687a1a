package agekey

import (
	"context"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// PlanSecret is a dry run's InstallSecret: what the apply would do to the
// Secret (created, configured, unchanged), the rotation gate as the apply
// would report it, and the Secret object for the phases after this one to
// plan against. An absent Secret (or one in a namespace the controllers
// phase creates) is planned created; an existing one is diffed with a
// server-side dry run, as the apply would write it.
func PlanSecret(ctx context.Context, c client.Client, rm *ssa.ResourceManager, ids *Identities, o InstallOptions) ([]verify.Check, verify.ObjectChange, *unstructured.Unstructured, error) {
	ref := o.Namespace + "/" + o.Name
	obj, err := SecretObject(o.Namespace, o.Name, ids)
	if err != nil {
		return nil, verify.ObjectChange{}, nil, err
	}
	oc := verify.ObjectChange{Object: apply.ID(obj)}
	var live corev1.Secret
	switch err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, &live); {
	case apierrors.IsNotFound(err):
		oc.Action = ssa.CreatedAction
		return nil, oc, obj, nil
	case err != nil:
		return nil, oc, nil, fmt.Errorf("read Secret %s: %w", ref, err)
	}
	rot := GateRotation.New()
	old, _, perr := SecretIdentities(&live)
	switch {
	case perr == nil && old.SameKeys(ids):
		rot.Verdict, rot.Message = verify.Pass, fmt.Sprintf("Secret %s already holds these identities (%s)", ref, strings.Join(ids.Recipients(), ", "))
	case !o.Rotate:
		what := "different age identities (" + safeRecipients(old) + ")"
		if perr != nil {
			what = "data this tool cannot parse as age identities"
		}
		rot.Verdict = verify.Fail
		rot.Message = fmt.Sprintf("Secret %s already holds %s; replacing it changes the key every Kustomization decrypts with: pass --rotate to replace it with %s", ref, what, strings.Join(ids.Recipients(), ", "))
		oc.Action = ssa.SkippedAction
		return []verify.Check{rot}, oc, nil, nil
	default:
		rot.Verdict = verify.Pass
		rot.Message = fmt.Sprintf("--rotate: Secret %s's identities (%s) would be replaced with %s", ref, safeRecipients(old), strings.Join(ids.Recipients(), ", "))
	}
	entry, _, _, err := rm.Diff(ctx, obj.DeepCopy(), ssa.DefaultDiffOptions())
	if err != nil {
		return []verify.Check{rot}, oc, nil, fmt.Errorf("server-side dry run of Secret %s: %w", ref, err)
	}
	oc.Action = entry.Action
	return []verify.Check{rot}, oc, obj, nil
}
