{{/*
The gRPC API's --api-auth: auth.mode when set; else token when auth.token.enabled (as before
auth.mode existed), else kubernetes (callers present their own Kubernetes tokens and RBAC
decides every call).
*/}}
{{- define "coach.apiAuth" -}}
{{- $mode := .Values.auth.mode | default (ternary "token" "kubernetes" .Values.auth.token.enabled) -}}
{{- if not (has $mode (list "kubernetes" "token" "none")) -}}
{{- fail (printf "auth.mode must be kubernetes, token or none, got %q" $mode) -}}
{{- end -}}
{{- if and (eq $mode "token") (not .Values.auth.token.enabled) -}}
{{- fail "auth.mode=token needs auth.token.enabled (and a token Secret)" -}}
{{- end -}}
{{- if and (ne $mode "token") .Values.auth.token.enabled -}}
{{- fail (printf "auth.token.enabled is not used with auth.mode=%s" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end }}
