package kube

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Transient says whether err is one an API server gives while it restarts
// or sheds load — connection refused or reset, a response cut off, 503,
// 429, a server-side timeout — so the same request may succeed in a
// moment. A refusal by the API (403, 404, 409, 422) or a cancelled context
// is not.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
}
