{{/*
Every object name comes from .Values, computed by solar (renderer/chain): the
levels of the Flux chain never name an object alike. A name longer than 53
characters is already cut there; solar.annotations keeps the full one. So do
the Flux policies (layerSelector, remediation): defined once, in
renderer/chart/flux.go.
*/}}

{{/* solar.annotations takes a dict with release and name ({name, full}). */}}
{{- define "solar.annotations" -}}
solar.opendefense.cloud/release: {{ .release | quote }}
{{- if ne .name.name .name.full }}
solar.opendefense.cloud/name: {{ .name.full | quote }}
{{- end -}}
{{- end -}}
