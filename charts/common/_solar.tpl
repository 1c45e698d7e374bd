{{/*
solar.name cuts a name to Helm's 53 characters: the first 46, then "-" and six
hex digits of its sha256, so cut names stay unique. The full name goes into the
annotation solar.opendefense.cloud/name (see solar.nameAnnotation).
*/}}
{{- define "solar.name" -}}
{{- if gt (len .) 53 -}}
{{- printf "%s-%s" (trunc 46 . | trimSuffix "-") (sha256sum . | trunc 6) -}}
{{- else -}}
{{- . -}}
{{- end -}}
{{- end -}}

{{- define "solar.nameAnnotation" -}}
{{- if gt (len .) 53 }}
solar.opendefense.cloud/name: {{ . | quote }}
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
