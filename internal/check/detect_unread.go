package check

// detUnread is the [unread] row of the table of detectors.
var detUnread = detector{ID: Unread, Gate: Render, Advisory: true,
	Short:   "kustomization entry an offline check cannot read (remote resource, base or generator file; a file over the read bound): what it adds is not checked",
	Rule:    "kustomize-controller v1.9.5 builds with kustomize api v0.21 (fluxcd/pkg/kustomize Generator), which fetches remote resources: an offline check cannot",
	Emitted: "unreadFinding (check.go)",
}
