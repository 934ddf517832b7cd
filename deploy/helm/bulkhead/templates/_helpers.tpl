{{- define "bulkhead.fullname" -}}
{{- printf "%s-bulkhead" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "bulkhead.labels" -}}
app.kubernetes.io/name: bulkhead
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* selector labels for one component: serve, gateway, prefill, decode */}}
{{- define "bulkhead.selector" -}}
app.kubernetes.io/name: bulkhead
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* the label set an InferencePool selects on: the OpenAI endpoints */}}
{{- define "bulkhead.poolSelector" -}}
bulkhead.dev/pool: {{ .Release.Name | quote }}
{{- end -}}

{{- define "bulkhead.validate" -}}
{{- if not (has .Values.mode (list "aggregated" "disaggregated")) -}}
{{- fail (printf "mode must be aggregated or disaggregated, got %q" .Values.mode) -}}
{{- end -}}
{{- if and .Values.tenants.toml .Values.tenants.existingSecret -}}
{{- fail "set tenants.toml or tenants.existingSecret, not both" -}}
{{- end -}}
{{- if .Values.llmd.sidecar -}}
{{- if ne .Values.mode "disaggregated" -}}
{{- fail "llmd.sidecar needs mode=disaggregated: prefill and decode workers behind llm-d's EPP" -}}
{{- end -}}
{{- range $k := list "prefillSecret" "decodeSecret" "routerSecret" -}}
{{- if not (index $.Values.llmd.certs $k) -}}
{{- fail (printf "llmd.sidecar needs llmd.certs.%s: workers accept llm-d's kv_transfer_params only over mutual TLS from the router certificate beside each decode pod (docs/DEPLOY.md, llm-d)" $k) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* memory request in bytes: weights + KV pool + overhead */}}
{{- define "bulkhead.memoryBytes" -}}
{{- add (int64 .Values.model.weightsBytes) (mul (int64 .Values.kv.tokens) (int64 .Values.kv.bytesPerToken)) (int64 .Values.overheadBytes) -}}
{{- end -}}

{{- define "bulkhead.engineResources" -}}
{{- $mem := include "bulkhead.memoryBytes" . | int64 -}}
requests:
  cpu: {{ .Values.threads | quote }}
  memory: {{ $mem | quote }}
limits:
  cpu: {{ .Values.threads | quote }}
  memory: {{ mul $mem (int64 .Values.limitsMemoryFactor) | quote }}
{{- end -}}

{{/* flags of every process that runs a local engine */}}
{{- define "bulkhead.engineArgs" -}}
{{- if .Values.model.path }}
- --model={{ .Values.model.path }}
{{- end }}
{{- if .Values.model.name }}
- --name={{ .Values.model.name }}
{{- end }}
- --kv-tokens={{ .Values.kv.tokens }}
- --max-context={{ .Values.kv.maxContext }}
- --page-size={{ .Values.kv.pageSize }}
- --threads={{ .Values.threads }}
{{- end -}}

{{- define "bulkhead.commonArgs" -}}
- --metrics-listen=0.0.0.0:{{ .Values.ports.metrics }}
- --log-level={{ .Values.logLevel }}
- --drain-timeout={{ .Values.drainTimeout }}
{{- end -}}

{{- define "bulkhead.tenantsArg" -}}
{{- if or .Values.tenants.toml .Values.tenants.existingSecret }}
- --tenants=/etc/bulkhead/tenants/tenants.toml
{{- end }}
{{- end -}}

{{- define "bulkhead.tenantsSecret" -}}
{{- .Values.tenants.existingSecret | default (printf "%s-tenants" (include "bulkhead.fullname" .)) -}}
{{- end -}}

{{/* probes of one container: dict root, port (name), scheme, load (size the
startup probe for model load) */}}
{{- define "bulkhead.probesOn" -}}
startupProbe:
  httpGet: {path: /health, port: {{ .port }}, scheme: {{ .scheme }}}
  periodSeconds: 5
  failureThreshold: {{ ternary (div (add (int .root.Values.model.loadSeconds) 4) 5) 12 .load }}
readinessProbe:
  httpGet: {path: /ready, port: {{ .port }}, scheme: {{ .scheme }}}
  periodSeconds: 2
  failureThreshold: 2
livenessProbe:
  httpGet: {path: /health, port: {{ .port }}, scheme: {{ .scheme }}}
  periodSeconds: 10
  failureThreshold: 3
{{- end -}}

{{/* probes: startup sized for model load, readiness /ready (model loaded, I3 checked), liveness /health */}}
{{- define "bulkhead.probes" -}}
startupProbe:
  httpGet: {path: /health, port: http}
  periodSeconds: 5
  failureThreshold: {{ div (add (int .Values.model.loadSeconds) 4) 5 }}
readinessProbe:
  httpGet: {path: /ready, port: http}
  periodSeconds: 2
  failureThreshold: 2
livenessProbe:
  httpGet: {path: /health, port: http}
  periodSeconds: 10
  failureThreshold: 3
{{- end -}}

{{- define "bulkhead.volumeMounts" -}}
{{- if .Values.model.volume }}
- {name: model, mountPath: /models, readOnly: true}
{{- end }}
{{- if or .Values.tenants.toml .Values.tenants.existingSecret }}
- {name: tenants, mountPath: /etc/bulkhead/tenants, readOnly: true}
{{- end }}
{{- if .Values.tls.existingSecret }}
- {name: tls, mountPath: /etc/bulkhead/tls, readOnly: true}
{{- end }}
{{- end -}}

{{- define "bulkhead.volumes" -}}
{{- if .Values.model.volume }}
- name: model
{{ toYaml .Values.model.volume | indent 2 }}
{{- end }}
{{- if or .Values.tenants.toml .Values.tenants.existingSecret }}
- name: tenants
  secret: {secretName: {{ include "bulkhead.tenantsSecret" . }}, defaultMode: 0400}
{{- end }}
{{- if .Values.tls.existingSecret }}
- name: tls
  secret: {secretName: {{ .Values.tls.existingSecret }}, defaultMode: 0400}
{{- end }}
{{- end -}}

{{- define "bulkhead.securityContext" -}}
runAsNonRoot: true
runAsUser: 65532
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
{{- end -}}

{{- define "bulkhead.ports" -}}
- {name: http, containerPort: {{ .Values.ports.http }}, protocol: TCP}
- {name: metrics, containerPort: {{ .Values.ports.metrics }}, protocol: TCP}
{{- end -}}
