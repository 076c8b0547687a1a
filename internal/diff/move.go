package diff

import (
	"fmt"
	"strings"
)

// Move is an object that leaves one Kustomization's render for another's
// in this change. What the cluster sees depends on which reconciles first:
// kustomize-controller's garbage collection (kustomization_controller.go
// prune → fluxcd/pkg/ssa v0.76.2 DeleteAll with the owner labels as
// Inclusions, manager_delete.go) deletes a stale object only while its
// owner labels still name the Kustomization collecting it. If From
// reconciles first, it deletes the object and To creates it anew (a
// PersistentVolumeClaim loses its volume's data); if To reconciles first,
// its apply sets its own owner labels and From's collection skips the
// object. Proven on the sandbox's controllers: e2e TestMoveHazard.
type Move struct {
	Object ObjectKey `json:"object"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	// Step is the one line that says it, with the fix.
	Step string `json:"step"`
}

// moves finds the objects c's Kustomizations hand over: removed (and
// pruned) from one, added to another. Their two object lines say so.
func (c *Cluster) moves() {
	added := map[ObjectKey]*Kustomization{}
	for _, k := range c.Kustomizations {
		for _, o := range k.Objects {
			if o.Change == Added {
				added[o.Key] = k
			}
		}
	}
	for _, from := range c.Kustomizations {
		for _, o := range from.Objects {
			to := added[o.Key]
			if o.Change != Removed || !o.Pruned || to == nil || to.Ref == from.Ref {
				continue
			}
			loss := ""
			if o.Key.Kind == "PersistentVolumeClaim" {
				loss = ", with the data of its volume,"
			}
			toNS, toName, _ := strings.Cut(to.Ref, "/")
			m := &Move{Object: o.Key, From: from.Ref, To: to.Ref}
			m.Step = fmt.Sprintf("%s moves from Kustomization %s to %s: if %s reconciles first, its garbage collection deletes it%s and %s creates it anew; if %s reconciles first, it takes the object over and %s's collection skips it — fix: annotate it kustomize.toolkit.fluxcd.io/prune: disabled for the move (and drop the annotation once both have reconciled), or reconcile %s first (flux reconcile kustomization %s -n %s)",
				o.Key, from.Ref, to.Ref, from.Ref, loss, to.Ref, to.Ref, from.Ref, to.Ref, toName, toNS)
			c.Moves = append(c.Moves, m)
			o.Action = "moves to Kustomization " + to.Ref + " (MOVE below): " + o.Action
			for _, ob := range to.Objects {
				if ob.Key == o.Key && ob.Change == Added {
					ob.Action = "moves from Kustomization " + from.Ref + " (MOVE below): " + ob.Action
				}
			}
		}
	}
}
