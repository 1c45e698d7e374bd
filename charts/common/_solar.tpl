{{/*
Every object name comes from .Values, computed by solar (renderer/chain): the
levels of the Flux chain never name an object alike. A name longer than 53
characters is already cut there; solar.annotations keeps the full one.
*/}}

{{/* solar.annotations takes a dict with release and name ({name, full}). */}}
{{- define "solar.annotations" -}}
solar.opendefense.cloud/release: {{ .release | quote }}
{{- if ne .name.name .name.full }}
solar.opendefense.cloud/name: {{ .name.full | quote }}
{{- end -}}
{{- end -}}

{{/*
solar.remediation is the install, upgrade, test and drift policy of every
HelmRelease; it takes a dict with createNamespace.
*/}}
{{- define "solar.remediation" -}}
install:
  {{- if .createNamespace }}
  createNamespace: true
  {{- end }}
  remediation:
    retries: 3
upgrade:
  remediation:
    retries: 3
test:
  enable: true
driftDetection:
  mode: enabled
{{- end -}}
