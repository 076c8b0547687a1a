package components_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/homelab-ops/bootstrap/pkg/components"
)

// Render the embedded Flux v2.4.0 release with `flux install`'s defaults.
func Example() {
	r, err := components.Generate(context.Background(), components.DefaultOptions("v2.4.0"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Origin)
	fmt.Println(strings.Join(r.Components, ","))
	fmt.Println(strings.Contains(string(r.YAML), "image: ghcr.io/fluxcd/kustomize-controller:v1.4.0"))
	// Output:
	// embedded Flux v2.4.0 release bundle
	// source-controller,kustomize-controller,helm-controller,notification-controller
	// true
}

// A refused option names its Options field.
func ExampleOptionError() {
	o := components.DefaultOptions("v2.4.0")
	o.ComponentsExtra = []string{"image-reflektor-controller"}
	_, err := components.Generate(context.Background(), o)
	var oe *components.OptionError
	if errors.As(err, &oe) {
		fmt.Println(oe.Field, oe.Value)
	}
	// Output:
	// Components image-reflektor-controller
}
