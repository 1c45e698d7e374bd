{{/* solar-agent.labels are the labels of every object of the chart. */}}
{{- define "solar-agent.labels" -}}
app.kubernetes.io/name: solar-agent
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* solar-agent.kubeconfigSecret is the Secret with the kubeconfig. */}}
{{- define "solar-agent.kubeconfigSecret" -}}
{{ .Release.Name | trunc 52 | trimSuffix "-" }}-kubeconfig
{{- end -}}

{{/* solar-agent.clusterRole names the ClusterRole and its binding: one per
release, as the release is one per Target. */}}
{{- define "solar-agent.clusterRole" -}}
{{ printf "%s-%s" .Release.Namespace .Release.Name | trunc 253 | trimSuffix "-" }}
{{- end -}}
