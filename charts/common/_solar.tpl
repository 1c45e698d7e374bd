{{/*
solar.name cuts a name to Helm's 53 characters: the first 46, then "-" and six
hex digits of its sha256, so cut names stay unique. solar.annotations keeps the
full name in the annotation solar.opendefense.cloud/name.
*/}}
{{- define "solar.name" -}}
{{- if gt (len .) 53 -}}
{{- printf "%s-%s" (trunc 46 . | trimSuffix "-") (sha256sum . | trunc 6) -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}

{{/* solar.annotations takes a dict with release and name. */}}
{{- define "solar.annotations" -}}
solar.opendefense.cloud/release: {{ .release | quote }}
{{- if gt (len .name) 53 }}
solar.opendefense.cloud/name: {{ .name | quote }}
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
