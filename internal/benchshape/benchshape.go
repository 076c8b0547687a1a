// Package benchshape writes a Flux repository shaped like the public
// homelab repositories (flux-cluster-template and the home-ops
// repositories built from it), for benchmarks of check and of
// fluxrepo.Load. It writes into a directory the caller owns (a test's
// t.TempDir()); no copy of any other repository is committed.
//
// The figures used (counted on public flux-cluster-template / home-ops
// style repositories, 2026-12; issue 57):
//   - ~140 Kustomizations in the first cluster: 120 app directories
//     kubernetes/apps/<namespace>/<app>/ks.yaml + app/, 1 in 7 of the
//     ks.yaml files declaring a second Kustomization (<app>-config, its own
//     config/ directory), in 20 namespaces, plus the roots cluster and
//     cluster-apps;
//   - each app/: kustomization.yaml and helmrelease.yaml with 50–200 lines
//     of values (app-template style); 2 in 3 an ocirepository.yaml (the
//     chartRef idiom), the others a shared HelmRepository under
//     kubernetes/flux/repositories; 1 in 4 an externalsecret.yaml; 1 in 6 a
//     SOPS-encrypted secret.sops.yaml; 1 in 5 a configMapGenerator with
//     files; 1 in 8 a spec.components entry in ks.yaml pointing at a shared
//     kubernetes/components/<name> (postBuild.substitute APP, a
//     ${VAR:=default} inside the component);
//   - the Taskfile-layout flux root kubernetes/flux (no kustomization.yaml):
//     config/ (the GitRepository, with spec.ignore keeping /kubernetes, and
//     the self-applying root Kustomization cluster), vars/ (cluster-settings
//     and a SOPS cluster-secrets), repositories/ and apps.yaml, the
//     Kustomization cluster-apps whose patches give every child
//     decryption and substituteFrom;
//   - a second cluster of the same layout, root kubernetes/staging/flux,
//     whose cluster-apps reads kubernetes/staging/apps/kustomization.yaml listing 15 of the
//     20 namespaces of the shared kubernetes/apps tree, plus 2 apps of its
//     own;
//   - ~1,100 files in all, the non-Flux ones included: docs (Markdown and
//     PNG images), scripts, CI workflows, Renovate config, Taskfiles, Talos
//     machine config and bootstrap helmfile values.
package benchshape

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The shape's figures (see the package comment).
const (
	Namespaces  = 20
	Apps        = 120 // app directories under kubernetes/apps
	ConfigEvery = 7   // 1 in 7 ks.yaml also declares <app>-config
	OCIEvery    = 3   // 2 in 3 apps (i%3 != 0) read their own OCIRepository
	ESEvery     = 4
	SOPSEvery   = 6
	CMGenEvery  = 5
	CompEvery   = 8
	// StagingNamespaces of the first cluster's namespaces the second
	// cluster applies too.
	StagingNamespaces = 15
	StagingApps       = 2
)

// Stats are the figures of what Write wrote.
type Stats struct {
	Files int
	// Kustomizations the first cluster (kubernetes/flux) renders, its
	// roots included; Staging the second's.
	Kustomizations, Staging int
	HelmReleases            int
}

var namespaces = []string{
	"actions-runner-system", "cert-manager", "database", "default", "external-secrets",
	"flux-system", "home-automation", "kube-system", "media", "monitoring",
	"network", "observability", "openebs-system", "rook-ceph", "security",
	"storage", "system-upgrade", "volsync-system", "downloads", "tools",
}

// Write writes the repository into dir (an empty directory).
func Write(dir string) (Stats, error) {
	w := &writer{dir: dir}
	var st Stats
	w.fluxRoot("flux", "main")
	w.fluxRoot("staging/flux", "staging")
	w.components()
	w.bootstrap()

	perNS := map[string][]string{}
	for i := range Apps {
		ns := namespaces[i%Namespaces]
		app := fmt.Sprintf("%s-%03d", appNames[i%len(appNames)], i)
		perNS[ns] = append(perNS[ns], app)
		n := w.app(ns, app, i)
		st.Kustomizations += n
		if i%Namespaces < StagingNamespaces {
			st.Staging += n
		}
		st.HelmReleases++
	}
	var nsList, stagingList strings.Builder
	for j, ns := range namespaces {
		var ks strings.Builder
		ks.WriteString("---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./namespace.yaml\n")
		for _, app := range perNS[ns] {
			fmt.Fprintf(&ks, "  - ./%s/ks.yaml\n", app)
		}
		w.write("kubernetes/apps/"+ns+"/kustomization.yaml", ks.String())
		w.write("kubernetes/apps/"+ns+"/namespace.yaml", fmt.Sprintf("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n", ns))
		fmt.Fprintf(&nsList, "  - ./%s\n", ns)
		if j < StagingNamespaces {
			fmt.Fprintf(&stagingList, "  - ../../apps/%s\n", ns)
		}
	}
	w.write("kubernetes/apps/kustomization.yaml", "---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"+nsList.String())
	// The second cluster's own apps, beside the shared tree.
	for i := range StagingApps {
		app := fmt.Sprintf("staging-only-%d", i)
		st.Staging += w.appAt("kubernetes/staging/apps/"+app, "./kubernetes/staging/apps/"+app+"/app", "default", app, 1000+i)
		st.HelmReleases++
		fmt.Fprintf(&stagingList, "  - ./%s/ks.yaml\n", app)
	}
	w.write("kubernetes/staging/apps/kustomization.yaml", "---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"+stagingList.String())
	st.Kustomizations += 2 // cluster, cluster-apps
	st.Staging += 2
	w.nonFlux(1100 - w.files - 1)
	w.write("README.md", "# home-ops\n\nA generated repository in the shape of the public homelab ones (internal/benchshape).\n")
	st.Files = w.files
	// Counted per cluster, not per repository: the staging-only apps'
	// HelmReleases belong to the second cluster.
	st.HelmReleases -= StagingApps
	return st, w.err
}

var appNames = []string{
	"authelia", "grafana", "prometheus", "loki", "immich", "jellyfin", "sonarr", "radarr",
	"home-assistant", "zigbee2mqtt", "postgres", "redis", "minio", "nextcloud", "paperless",
	"vaultwarden", "gatus", "echo", "cloudflared", "external-dns", "ingress-nginx", "cilium",
	"coredns", "metrics-server", "reloader", "spegel", "volsync", "snapshot-controller",
}

type writer struct {
	dir   string
	files int
	err   error
}

func (w *writer) write(rel, s string) {
	if w.err != nil {
		return
	}
	p := filepath.Join(w.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		w.err = err
		return
	}
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		w.err = err
		return
	}
	w.files++
}

// fluxRoot writes kubernetes/<dir>: config/, vars/, repositories/ and
// apps.yaml; the cluster's apps are kubernetes/apps (main) or
// kubernetes/<cluster>/apps (dir kubernetes/<cluster>/flux).
func (w *writer) fluxRoot(dir, cluster string) {
	base := "kubernetes/" + dir + "/"
	appsPath := "./kubernetes/apps"
	if dir != "flux" {
		appsPath = "./kubernetes/" + strings.TrimSuffix(dir, "/flux") + "/apps"
	}
	w.write(base+"config/kustomization.yaml", "---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./cluster.yaml\n")
	w.write(base+"config/cluster.yaml", fmt.Sprintf(`---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: home-kubernetes
  namespace: flux-system
spec:
  interval: 30m
  ref:
    branch: main
  url: https://git.example.invalid/owner/home-ops.git
  ignore: |
    # exclude all
    /*
    # include kubernetes directory
    !/kubernetes
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cluster
  namespace: flux-system
spec:
  interval: 30m
  path: ./kubernetes/%s
  prune: true
  wait: false
  sourceRef:
    kind: GitRepository
    name: home-kubernetes
  decryption:
    provider: sops
    secretRef:
      name: sops-age
  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: cluster-settings
      - kind: Secret
        name: cluster-secrets
`, dir))
	w.write(base+"vars/kustomization.yaml", "---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./cluster-settings.yaml\n  - ./cluster-secrets.sops.yaml\n")
	w.write(base+"vars/cluster-settings.yaml", fmt.Sprintf(`---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cluster-settings
  namespace: flux-system
data:
  TIMEZONE: Europe/Berlin
  CLUSTER_NAME: %s
  CLUSTER_CIDR: 10.42.0.0/16
  SERVICE_CIDR: 10.43.0.0/16
  NODE_CIDR: 192.168.1.0/24
  LB_RANGE: 192.168.1.200-192.168.1.250
  STORAGE_CLASS: ceph-block
`, cluster))
	w.write(base+"vars/cluster-secrets.sops.yaml", sopsSecret("cluster-secrets", "flux-system", []string{"SECRET_DOMAIN", "SECRET_ACME_EMAIL", "SECRET_CLOUDFLARE_TUNNEL_ID"}))
	var repos strings.Builder
	repos.WriteString("---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, r := range helmRepos {
		fmt.Fprintf(&repos, "  - ./%s.yaml\n", r)
		w.write(base+"repositories/helm/"+r+".yaml", fmt.Sprintf("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: %[1]s\n  namespace: flux-system\nspec:\n  interval: 2h\n  url: https://%[1]s.example.invalid/charts\n", r))
	}
	w.write(base+"repositories/helm/kustomization.yaml", repos.String())
	w.write(base+"repositories/kustomization.yaml", "---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./helm\n")
	w.write(base+"apps.yaml", fmt.Sprintf(`---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: cluster-apps
  namespace: flux-system
spec:
  interval: 30m
  path: %s
  prune: true
  sourceRef:
    kind: GitRepository
    name: home-kubernetes
  decryption:
    provider: sops
    secretRef:
      name: sops-age
  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: cluster-settings
      - kind: Secret
        name: cluster-secrets
  patches:
    - patch: |-
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: not-used
        spec:
          decryption:
            provider: sops
            secretRef:
              name: sops-age
          postBuild:
            substituteFrom:
              - kind: ConfigMap
                name: cluster-settings
              - kind: Secret
                name: cluster-secrets
      target:
        group: kustomize.toolkit.fluxcd.io
        kind: Kustomization
        labelSelector: substitution.flux.home.arpa/disabled notin (true)
`, appsPath))
}

var helmRepos = []string{"bjw-s", "bitnami", "grafana", "prometheus-community", "jetstack", "ingress-nginx"}

var components = []string{"volsync", "gatus", "common"}

// components writes kubernetes/components/<name>: each reads ${APP} and a
// ${VAR:=default}.
func (w *writer) components() {
	for _, c := range components {
		base := "kubernetes/components/" + c + "/"
		w.write(base+"kustomization.yaml", "---\napiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n  - ./"+c+".yaml\n")
		w.write(base+c+".yaml", fmt.Sprintf(`---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${APP}-%[1]s
data:
  capacity: ${%[2]s_CAPACITY:=5Gi}
  schedule: "${%[2]s_SCHEDULE:=0 * * * *}"
  host: ${APP}.${SECRET_DOMAIN}
  cluster: ${CLUSTER_NAME}
`, c, strings.ToUpper(c)))
	}
}

// bootstrap writes what the Taskfile bootstrap reads.
func (w *writer) bootstrap() {
	w.write("kubernetes/bootstrap/flux/kustomization.yaml", `---
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - github.com/fluxcd/flux2/manifests/install?ref=v2.7.5
patches:
  - patch: |
      $patch: delete
      apiVersion: networking.k8s.io/v1
      kind: NetworkPolicy
      metadata:
        name: not-used
    target:
      group: networking.k8s.io
      kind: NetworkPolicy
`)
	w.write(".taskfiles/flux/Taskfile.yaml", `---
version: "3"

tasks:
  bootstrap:
    desc: Bootstrap Flux into a Kubernetes cluster
    cmds:
      - kubectl apply --server-side --kustomize {{.KUBERNETES_DIR}}/bootstrap/flux
      - cat {{.AGE_FILE}} | kubectl -n flux-system create secret generic sops-age --from-file=age.agekey=/dev/stdin
      - sops --decrypt {{.KUBERNETES_DIR}}/flux/vars/cluster-secrets.sops.yaml | kubectl apply -f -
      - kubectl apply -f {{.KUBERNETES_DIR}}/flux/vars/cluster-settings.yaml
      - kubectl apply --server-side --kustomize {{.KUBERNETES_DIR}}/flux/config
    preconditions:
      - test -f {{.AGE_FILE}}
      - which kubectl sops

  reconcile:
    desc: Force Flux to pull in changes from the Git repository
    cmds:
      - flux reconcile -n flux-system kustomization cluster --with-source
`)
	w.write("Taskfile.yaml", `---
version: "3"

vars:
  KUBERNETES_DIR: "{{.ROOT_DIR}}/kubernetes"
  AGE_FILE: "{{.ROOT_DIR}}/age.key"

includes:
  flux: .taskfiles/flux/Taskfile.yaml

tasks:
  default: task --list
`)
}

// app writes kubernetes/apps/<ns>/<app>: ks.yaml and app/ (and config/
// for the apps with a second Kustomization). It returns the
// Kustomizations written.
func (w *writer) app(ns, app string, i int) int {
	return w.appAt("kubernetes/apps/"+ns+"/"+app, "./kubernetes/apps/"+ns+"/"+app+"/app", ns, app, i)
}

func (w *writer) appAt(base, path, ns, app string, i int) int {
	comp := ""
	substitute := ""
	if i%CompEvery == 0 {
		c := components[(i/CompEvery)%len(components)]
		comp = "  components:\n    - ../../../../components/" + c + "\n"
		substitute = fmt.Sprintf("    substitute:\n      APP: %s\n", app)
		if i%2 == 0 {
			substitute += fmt.Sprintf("      %s_CAPACITY: 10Gi\n", strings.ToUpper(c))
		}
	}
	postBuild := ""
	if substitute != "" {
		postBuild = "  postBuild:\n" + substitute
	}
	ks := fmt.Sprintf(`---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: &app %[1]s
  namespace: flux-system
spec:
  targetNamespace: %[2]s
  commonMetadata:
    labels:
      app.kubernetes.io/name: *app
%[3]s  path: %[4]s
  prune: true
  sourceRef:
    kind: GitRepository
    name: home-kubernetes
  wait: %[6]v
  interval: 30m
  retryInterval: 1m
  timeout: 5m
%[5]s`, app, ns, comp, path, postBuild, i%4 == 0)
	n := 1
	if i%ConfigEvery == 0 {
		n++
		cfgPath := strings.TrimSuffix(path, "/app") + "/config"
		ks += fmt.Sprintf(`---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: &app %[1]s-config
  namespace: flux-system
spec:
  targetNamespace: %[2]s
  commonMetadata:
    labels:
      app.kubernetes.io/name: *app
  dependsOn:
    - name: %[1]s
  path: %[3]s
  prune: true
  sourceRef:
    kind: GitRepository
    name: home-kubernetes
  wait: false
  interval: 30m
`, app, ns, cfgPath)
		w.write(base+"/config/kustomization.yaml", "---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./config.yaml\n")
		w.write(base+"/config/config.yaml", fmt.Sprintf("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-extra\ndata:\n  cluster: ${CLUSTER_NAME}\n  url: https://%s.${SECRET_DOMAIN}\n", app, app))
	}
	w.write(base+"/ks.yaml", ks)

	res := []string{"./helmrelease.yaml"}
	chart := fmt.Sprintf("  chartRef:\n    kind: OCIRepository\n    name: %s\n", app)
	if i%OCIEvery != 0 {
		res = append([]string{"./ocirepository.yaml"}, res...)
		w.write(base+"/app/ocirepository.yaml", fmt.Sprintf(`---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: %s
spec:
  interval: 5m
  layerSelector:
    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip
    operation: copy
  ref:
    tag: 3.%d.0
  url: oci://ghcr.io/bjw-s/helm/app-template
`, app, i%8))
	} else {
		chart = fmt.Sprintf("  chart:\n    spec:\n      chart: %s\n      version: 1.%d.0\n      sourceRef:\n        kind: HelmRepository\n        name: %s\n        namespace: flux-system\n", app, i%10, helmRepos[i%len(helmRepos)])
	}
	if i%ESEvery == 0 {
		res = append(res, "./externalsecret.yaml")
		w.write(base+"/app/externalsecret.yaml", fmt.Sprintf(`---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: %[1]s
spec:
  secretStoreRef:
    kind: ClusterSecretStore
    name: onepassword
  target:
    name: %[1]s-secret
    template:
      data:
        API_KEY: "{{ .%[2]s_API_KEY }}"
        DATABASE_URL: "postgres://{{ .POSTGRES_USER }}:{{ .POSTGRES_PASS }}@postgres.database.svc.cluster.local/%[1]s"
  dataFrom:
    - extract:
        key: %[1]s
    - extract:
        key: cloudnative-pg
`, app, strings.ToUpper(strings.ReplaceAll(app, "-", "_"))))
	}
	if i%SOPSEvery == 0 {
		res = append(res, "./secret.sops.yaml")
		w.write(base+"/app/secret.sops.yaml", sopsSecret(app+"-secret-sops", "", []string{"TOKEN", "PASSWORD"}))
	}
	gen := ""
	if i%CMGenEvery == 0 {
		gen = fmt.Sprintf("configMapGenerator:\n  - name: %s-configmap\n    files:\n      - ./resources/config.yaml\n      - ./resources/settings.json\ngeneratorOptions:\n  disableNameSuffixHash: true\n", app)
		w.write(base+"/app/resources/config.yaml", fmt.Sprintf("server:\n  host: 0.0.0.0\n  port: 8080\nlog:\n  level: info\nurl: https://%s.${SECRET_DOMAIN}\ntimezone: ${TIMEZONE}\n", app))
		w.write(base+"/app/resources/settings.json", fmt.Sprintf("{\n  \"name\": %q,\n  \"features\": {\"metrics\": true, \"tracing\": false},\n  \"retention\": \"30d\"\n}\n", app))
	}
	var k strings.Builder
	k.WriteString("---\napiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, r := range res {
		fmt.Fprintf(&k, "  - %s\n", r)
	}
	k.WriteString(gen)
	w.write(base+"/app/kustomization.yaml", k.String())
	w.write(base+"/app/helmrelease.yaml", helmRelease(app, chart, i))
	return n
}

// helmRelease is an app-template style HelmRelease of 50–200 lines of values.
func helmRelease(app, chart string, i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: %[1]s
spec:
  interval: 1h
%[2]s  install:
    remediation:
      retries: -1
  upgrade:
    cleanupOnFail: true
    remediation:
      retries: 3
  values:
    defaultPodOptions:
      securityContext:
        runAsNonRoot: true
        runAsUser: 1000
        runAsGroup: 1000
        fsGroup: 1000
        fsGroupChangePolicy: OnRootMismatch
    controllers:
      %[1]s:
        annotations:
          reloader.stakater.com/auto: "true"
        containers:
`, app, chart)
	// 1 to 4 containers of ~25 lines each, and 0 to 3 blocks of
	// persistence/routes: 50 to 200 lines of values.
	containers := 1 + i%4
	for c := range containers {
		fmt.Fprintf(&b, `          c%[2]d:
            image:
              repository: ghcr.io/home-operations/%[1]s-c%[2]d
              tag: 1.%[3]d.%[2]d@sha256:%064[4]x
            env:
              TZ: ${TIMEZONE}
              %[5]s__INSTANCE_NAME: %[1]s
              %[5]s__PORT: &port%[2]d 80%[2]d0
              %[5]s__URL: https://%[1]s.${SECRET_DOMAIN}
            envFrom:
              - secretRef:
                  name: %[1]s-secret
            probes:
              liveness: &probes%[2]d
                enabled: true
                custom: true
                spec:
                  httpGet:
                    path: /healthz
                    port: *port%[2]d
                  initialDelaySeconds: 0
                  periodSeconds: 10
                  timeoutSeconds: 1
                  failureThreshold: 3
              readiness: *probes%[2]d
            securityContext:
              allowPrivilegeEscalation: false
              readOnlyRootFilesystem: true
              capabilities: {drop: ["ALL"]}
            resources:
              requests:
                cpu: 10m
              limits:
                memory: 1Gi
`, app, c, i%20, i*7919+c, strings.ToUpper(strings.ReplaceAll(app, "-", "_")))
	}
	fmt.Fprintf(&b, `    service:
      app:
        controller: %[1]s
        ports:
          http:
            port: 80
    route:
      app:
        hostnames: ["{{ .Release.Name }}.${SECRET_DOMAIN}"]
        parentRefs:
          - name: internal
            namespace: kube-system
            sectionName: https
`, app)
	if i%4 > 0 {
		b.WriteString("    persistence:\n")
	}
	for p := range i % 4 {
		fmt.Fprintf(&b, `      data%[2]d:
        existingClaim: %[1]s-data%[2]d
        globalMounts:
          - path: /data%[2]d
      tmp%[2]d:
        type: emptyDir
        medium: Memory
        sizeLimit: 1Gi
`, app, p)
	}
	return b.String()
}

func sopsSecret(name, ns string, keys []string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Secret\nmetadata:\n    name: " + name + "\n")
	if ns != "" {
		b.WriteString("    namespace: " + ns + "\n")
	}
	b.WriteString("type: Opaque\nstringData:\n")
	for i, k := range keys {
		fmt.Fprintf(&b, "    %s: ENC[AES256_GCM,data:c2VjcmV0LSVk%02d,iv:aXZpdml2aXZpdml2aXZpdg==,tag:dGFndGFndGFndGFn,type:str]\n", k, i)
	}
	b.WriteString(`sops:
    age:
        - recipient: age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq
          enc: |
            -----BEGIN AGE ENCRYPTED FILE-----
            YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSBiZW5jaG1hcmsKYmVuY2ht
            YXJrLW5vdC1hLXJlYWwta2V5LWJlbmNobWFyay1ub3QtYS1yZWFsLWtleQotLS0g
            -----END AGE ENCRYPTED FILE-----
    lastmodified: "2026-11-01T10:00:00Z"
    mac: ENC[AES256_GCM,data:bWFjLWJlbmNo,iv:bWFjaXZtYWNpdm1hY2l2bWFjaXY=,tag:bWFjdGFnbWFjdGFn,type:str]
    encrypted_regex: ^(data|stringData)$
    version: 3.9.1
`)
	return b.String()
}

// nonFlux writes n files that are no part of any Flux build: docs with
// images, scripts, CI, Renovate, Talos and bootstrap helmfile values.
func (w *writer) nonFlux(n int) {
	kinds := []func(j int){
		func(j int) {
			w.write(fmt.Sprintf("docs/src/notes/note-%03d.md", j), fmt.Sprintf("# Note %d\n\nHow the cluster runs, part %d.\n\n![diagram](../assets/img-%03d.png)\n", j, j, j))
		},
		func(j int) {
			// A small PNG: the signature and an IHDR chunk, then filler.
			w.write(fmt.Sprintf("docs/src/assets/img-%03d.png", j), "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"+strings.Repeat(fmt.Sprintf("%c", 'a'+j%26), 2048+j*13))
		},
		func(j int) {
			w.write(fmt.Sprintf("scripts/script-%03d.sh", j), fmt.Sprintf("#!/usr/bin/env bash\nset -euo pipefail\n# helper %d\nkubectl get pods -A | grep -v Running || true\n", j))
		},
		func(j int) {
			w.write(fmt.Sprintf(".github/workflows/wf-%03d.yaml", j), fmt.Sprintf("---\nname: wf-%d\non:\n  pull_request:\n    branches: [main]\njobs:\n  run:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: echo ${{ github.sha }}\n", j))
		},
		func(j int) {
			w.write(fmt.Sprintf(".renovate/rule-%03d.json5", j), fmt.Sprintf("{\n  packageRules: [\n    {description: \"rule %d\", matchDatasources: [\"docker\"], automerge: true},\n  ],\n}\n", j))
		},
		func(j int) {
			w.write(fmt.Sprintf("talos/patches/node-%03d.yaml", j), fmt.Sprintf("machine:\n  network:\n    hostname: node-%d\n  install:\n    disk: /dev/sda\n", j))
		},
		func(j int) {
			w.write(fmt.Sprintf("bootstrap/helmfile.d/values-%03d.yaml.gotmpl", j), fmt.Sprintf("---\n# values %d\nreplicas: 1\nimage: {{ .Values.image | default \"x\" }}\n", j))
		},
	}
	for j := range n {
		kinds[j%len(kinds)](j)
	}
}
