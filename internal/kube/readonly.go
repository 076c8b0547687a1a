package kube

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Requests records the API requests of a read-only run by verb (get, list,
// watch, or the HTTP method of anything else) and the ones refused.
type Requests struct {
	mu      sync.Mutex
	verbs   map[string]int
	refused []string
}

// NewRequests starts an empty record.
func NewRequests() *Requests { return &Requests{verbs: map[string]int{}} }

// ReadOnly wraps cfg's transport so that only reads reach the API server: a
// GET (get, list, watch, discovery) is sent and counted; any other method
// is refused in the process, recorded, and answered with an error naming
// it. A read-only command fails closed: a write it did not mean to make
// can never leave the machine.
func ReadOnly(cfg *rest.Config, rec *Requests) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet {
				rec.add(r.Method, r.Method+" "+r.URL.Path)
				return nil, fmt.Errorf("read-only: refused %s %s (this command never writes to the cluster)", r.Method, r.URL.Path)
			}
			rec.add(readVerb(r), "")
			return rt.RoundTrip(r)
		})
	})
}

// readVerb is the Kubernetes verb of a GET: watch, list (a collection) or get.
func readVerb(r *http.Request) string {
	q := r.URL.Query()
	switch {
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		return "watch"
	case strings.Contains(r.URL.Path, "/watch/"):
		return "watch"
	}
	// /api/v1/namespaces/NS/pods is a list, …/pods/NAME a get; the
	// discovery documents (/api, /apis/GROUP/VERSION, /version) are gets.
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(p) >= 2 && p[0] == "api":
		rest = p[2:]
	case len(p) >= 3 && p[0] == "apis":
		rest = p[3:]
	default:
		return "get"
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		if len(rest) == 2 {
			return "get" // the Namespace object itself
		}
		rest = rest[2:]
	}
	if len(rest) == 1 {
		return "list"
	}
	return "get"
}

func (q *Requests) add(verb, refused string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.verbs[verb]++
	if refused != "" {
		q.refused = append(q.refused, refused)
	}
}

// Verbs are the counts by verb.
func (q *Requests) Verbs() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[string]int{}
	for k, v := range q.verbs {
		out[k] = v
	}
	return out
}

// Refused lists the requests that were not sent ("PATCH /apis/…").
func (q *Requests) Refused() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.refused...)
}

// String is "get 3, list 9, watch 0" in verb order.
func (q *Requests) String() string {
	v := q.Verbs()
	for _, k := range []string{"get", "list", "watch"} {
		if _, ok := v[k]; !ok {
			v[k] = 0
		}
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, v[k]))
	}
	return strings.Join(parts, ", ")
}
