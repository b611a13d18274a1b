{{/* Names and labels shared by every template. */}}
{{- define "coach.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "coach.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "coach.selectorLabels" -}}
app.kubernetes.io/name: {{ include "coach.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "coach.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "coach.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: coach
{{- end -}}

{{- define "coach.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "coach.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* "true" when leader election is on: forced, or auto with more than one replica. */}}
{{- define "coach.leaderElect" -}}
{{- $le := .Values.leaderElection.enabled -}}
{{- if eq (toString $le) "auto" -}}
{{- if gt (int .Values.replicas) 1 }}true{{ else }}false{{ end -}}
{{- else if eq (toString $le) "true" -}}
true
{{- else if eq (toString $le) "false" -}}
{{- if gt (int .Values.replicas) 1 -}}
{{- fail "leaderElection.enabled=false with replicas > 1: two operators would reconcile the same jobs" -}}
{{- end -}}
false
{{- else -}}
{{- fail (printf "leaderElection.enabled must be auto, true or false, got %v" $le) -}}
{{- end -}}
{{- end -}}

{{/*
"true" when replicas report progress (--progress-report-address): progressReports.enabled, and no
mutual TLS (replica pods have no client certificate).
*/}}
{{- define "coach.progressReports" -}}
{{- if and .Values.progressReports.enabled (not (and .Values.tls.enabled .Values.tls.clientCA)) -}}
true
{{- else -}}
false
{{- end -}}
{{- end -}}

{{/* host:port at which replica pods reach the gRPC API: progressReports.address, else this Service. */}}
{{- define "coach.progressReportAddress" -}}
{{- .Values.progressReports.address | default (printf "%s.%s.svc:%v" (include "coach.fullname" .) .Release.Namespace .Values.service.grpcPort) -}}
{{- end -}}

{{/* The namespaces the operator acts in (namespaced scope). */}}
{{- define "coach.namespaces" -}}
{{- if .Values.rbac.namespaces -}}
{{- join "," .Values.rbac.namespaces -}}
{{- else -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{- define "coach.tokenSecretName" -}}
{{- if .Values.auth.token.existingSecret -}}
{{- .Values.auth.token.existingSecret -}}
{{- else -}}
{{- printf "%s-token" (include "coach.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/*
The rules the kube backend needs, in one place for the ClusterRole and the namespaced Roles.
README.md says why each is there. No wildcards.
*/}}
{{- define "coach.rules" -}}
- apiGroups: [kubeflow.org]
  resources: [pytorchjobs, tfjobs, xgboostjobs, mpijobs, paddlejobs, jaxjobs]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [kubeflow.org]
  resources: [pytorchjobs/status, tfjobs/status, xgboostjobs/status, mpijobs/status, paddlejobs/status, jaxjobs/status]
  verbs: [get, update, patch]
- apiGroups: [kubeflow.org]
  resources: [pytorchjobs/finalizers, tfjobs/finalizers, xgboostjobs/finalizers, mpijobs/finalizers, paddlejobs/finalizers, jaxjobs/finalizers]
  verbs: [update]
- apiGroups: [trainer.kubeflow.org]
  resources: [trainjobs]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [trainer.kubeflow.org]
  resources: [trainjobs/status]
  verbs: [get, update, patch]
- apiGroups: [trainer.kubeflow.org]
  resources: [trainjobs/finalizers]
  verbs: [update]
- apiGroups: [trainer.kubeflow.org]
  resources: [trainingruntimes, clustertrainingruntimes]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
- apiGroups: [""]
  resources: [pods/exec]
  verbs: [create]
- apiGroups: [""]
  resources: [services]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [get, list, watch, create, patch, delete]
# An MPI TrainJob's SSH key Secret: created, never read (the operator reads no Secret but its webhook certificate's, templates/webhook.yaml).
- apiGroups: [""]
  resources: [secrets]
  verbs: [create]
# A TrainJob runtime's volumeClaimPolicies (owned claims go with their job, through the GC).
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, watch, create]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles, rolebindings]
  verbs: [get, list, watch, create, update, patch, delete]
# An elastic PyTorchJob's HorizontalPodAutoscaler (elasticPolicy.metrics), as upstream makes it;
# patched, never updated (docs/kubernetes.md).
- apiGroups: [autoscaling]
  resources: [horizontalpodautoscalers]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch, list, watch]
# Kueue (docs/queues.md): which queue holds a job and why, read from the job's Workload and the
# LocalQueue it names. Read-only; without Kueue's CRDs the operator skips these watches.
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads, localqueues]
  verbs: [list, watch]
{{- if eq .Values.operator.gangScheduler "volcano" }}
- apiGroups: [scheduling.volcano.sh]
  resources: [podgroups]
  verbs: [get, list, watch, create, update, patch, delete]
{{- else if eq .Values.operator.gangScheduler "scheduler-plugins" }}
- apiGroups: [scheduling.x-k8s.io]
  resources: [podgroups]
  verbs: [get, list, watch, create, update, patch, delete]
{{- else if ne .Values.operator.gangScheduler "none" }}
{{- fail (printf "operator.gangScheduler must be none, volcano or scheduler-plugins, got %q" .Values.operator.gangScheduler) }}
{{- end }}
{{- end -}}

{{/*
The admission webhooks' Service, and the Secret holding their serving certificate.
*/}}
{{- define "coach.webhookService" -}}
{{- printf "%s-webhook" (include "coach.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "coach.webhookSecret" -}}
{{- printf "%s-webhook-cert" (include "coach.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
