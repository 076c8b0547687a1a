package fluxrepo

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DataClient answers kustomize-controller's substitution (fluxcd/pkg/
// kustomize.SubstituteVariables reads substituteFrom with Get) from the
// ConfigMaps and Secrets the environment renders, as the cluster will once
// they are applied. Only Get is implemented.
type DataClient struct {
	client.Client // nil: only Get is called
	Env           *Env
	// Data, when set, answers instead of Env.Data (the environment's
	// objects as they were at another revision: bootstrap diff's window).
	Data map[string]*Data
	// Extra answers for objects the environment does not render (a
	// repository policy's declared prerequisites); nil: none.
	Extra func(key string) *Data
}

func (c DataClient) data(kind string, key client.ObjectKey) *Data {
	k := DataKey(kind, key.Namespace, key.Name)
	data := c.Data
	if data == nil {
		data = c.Env.Data
	}
	if d := data[k]; d != nil {
		return d
	}
	if c.Extra != nil {
		return c.Extra(k)
	}
	return nil
}

// Get implements client.Reader for ConfigMaps and Secrets.
func (c DataClient) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		d := c.data("ConfigMap", key)
		if d == nil {
			return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
		}
		o.Data = maps.Clone(d.Values)
	case *corev1.Secret:
		d := c.data("Secret", key)
		if d == nil {
			return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
		}
		o.Data = map[string][]byte{}
		for k, v := range d.Values {
			o.Data[k] = []byte(v)
		}
	default:
		return fmt.Errorf("unexpected Get of %T", obj)
	}
	return nil
}
