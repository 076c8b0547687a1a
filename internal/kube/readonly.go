package kube

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Requests records API requests by verb (see Verb) and, for a read-only
// run, the ones refused.
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
				rec.add(Verb(r), r.Method+" "+r.URL.Path)
				return nil, fmt.Errorf("read-only: refused %s %s (this command never writes to the cluster)", r.Method, r.URL.Path)
			}
			rec.add(Verb(r), "")
			return rt.RoundTrip(r)
		})
	})
}

// CountRequestsInto wraps cfg's transport to record its requests in rec:
// a command that connects once per phase counts every phase's requests.
func CountRequestsInto(cfg *rest.Config, rec *Requests) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			rec.add(Verb(r), "")
			return rt.RoundTrip(r)
		})
	})
}

// Verb names a request as the API server's audit log would, with a
// server-side apply and its dry run told apart: get, list, watch, apply,
// dry-run (any write with dryRun=All), patch, create, update, delete.
func Verb(r *http.Request) string {
	switch {
	case r.Method == http.MethodGet:
		return readVerb(r)
	case r.URL.Query().Get("dryRun") != "":
		return "dry-run"
	case r.Method == http.MethodPatch && strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch"):
		return "apply"
	}
	switch r.Method {
	case http.MethodPatch:
		return "patch"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(r.Method)
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

// Total is the number of requests recorded.
func (q *Requests) Total() int {
	n := 0
	for _, v := range q.Verbs() {
		n += v
	}
	return n
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
