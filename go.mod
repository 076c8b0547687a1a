module github.com/homelab-ops/bootstrap

go 1.26.8

require (
	github.com/blang/semver/v4 v4.0.0 // indirect
	github.com/fluxcd/flux2/v2 v2.9.5 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	sigs.k8s.io/kustomize/api v0.21.2 // indirect
)
