{{/* Chart name, truncated to the 63 characters a label value may hold. */}}
{{- define "lockstep.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified name of every object the chart creates. */}}
{{- define "lockstep.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "lockstep.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "lockstep.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lockstep.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "lockstep.labels" -}}
helm.sh/chart: {{ include "lockstep.chart" . }}
{{ include "lockstep.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: lockstep
{{- end }}

{{- define "lockstep.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "lockstep.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag or repository@digest; the tag defaults to the chart's appVersion. */}}
{{- define "lockstep.imageRef" -}}
{{- $image := index . 0 }}{{- $root := index . 1 }}
{{- if $image.digest }}
{{- printf "%s@%s" $image.repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $image.repository (default $root.Chart.AppVersion $image.tag) }}
{{- end }}
{{- end }}

{{/* Namespaces the operator watches in namespace scope (default: the release namespace). */}}
{{- define "lockstep.watchNamespaces" -}}
{{- if .Values.rbac.namespaces }}
{{- toJson .Values.rbac.namespaces }}
{{- else }}
{{- toJson (list .Release.Namespace) }}
{{- end }}
{{- end }}

{{- define "lockstep.leaderElectionNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace }}
{{- end }}

{{/*
Rules for the namespaced resources the operator reads and writes; a ClusterRole in cluster scope,
a Role per watched namespace in namespace scope. Each verb has a call site (docs/install.md lists
them); tests/unit/helm checks this list exactly. Add a verb together with the code that needs it.
*/}}
{{- define "lockstep.namespacedRules" -}}
- apiGroups: [lockstep.dev]
  resources: [trainingjobs]
  verbs: [get, list, watch, delete]
- apiGroups: [lockstep.dev]
  resources: [trainingjobs/status]
  verbs: [get, patch]
- apiGroups: [lockstep.dev]
  resources: [trainingjobs/finalizers]
  verbs: [update]
# TrainingTemplates a job of the namespace names in spec.templateRef (read only; the operator
# merges one into the job's spec until the job starts, then keeps a snapshot in its status).
- apiGroups: [lockstep.dev]
  resources: [trainingtemplates]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch, create, delete]
- apiGroups: [""]
  resources: [pods/binding]
  verbs: [create]
# The gang scheduler marks a pod it preempts DisruptionTarget=True before deleting it.
- apiGroups: [""]
  resources: [pods/status]
  verbs: [patch]
- apiGroups: [""]
  resources: [services]
  verbs: [get, list, watch, create]
# Each job's rendezvous Secret: created, and read back by name (the launcher monitor's token; the
# owner check when its create finds one). Never listed or watched: RBAC cannot limit those to the
# operator's labelled Secrets, so they would open every Secret in the namespaces it watches.
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, create]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
# The gang scheduler's volume binding (docs/scheduler.md, "Volumes"): a WaitForFirstConsumer
# claim of a placed pod gets volume.kubernetes.io/selected-node, as kube-scheduler would set.
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [patch]
# Each job's NetworkPolicy (only its own pods reach its launchers): created, and watched to see
# whether it exists; deleted with the job by the garbage collector, never updated or read alone.
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [list, watch, create]
# Each job's EndpointSlice (its headless Service has no selector: the operator publishes the pods'
# addresses itself): server-side applied (patch; create for the first apply) and watched for the
# digest it was written with; deleted with the job by the garbage collector.
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch, create, patch]
{{- if .Values.kueue.enabled }}
# Kueue (--kueue, docs/queues.md): the operator owns one Workload per queued TrainingJob and
# reports PodsReady and Finished on its status (and clears an evicted one's admission).
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [list, watch, create, patch, delete]
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads/status]
  verbs: [patch]
{{- end }}
{{- end }}

{{/*
Cluster-wide reads of the gang scheduler: every node's capacity, the priority classes that order
the queue, claims, volumes and storage classes (and the pre-bind of a volume), and (namespace scope only; cluster scope has it already) every pod, because GPUs on a
shared node are taken by pods of any namespace.
*/}}
{{- define "lockstep.clusterReadRules" -}}
# ClusterTrainingTemplates (cluster-scoped, read only): see trainingtemplates above.
- apiGroups: [lockstep.dev]
  resources: [clustertrainingtemplates]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [nodes]
  verbs: [get, list, watch]
- apiGroups: [scheduling.k8s.io]
  resources: [priorityclasses]
  verbs: [get, list, watch]
# Volumes (docs/scheduler.md, "Volumes"): the claims, PersistentVolumes and StorageClasses that
# decide where a pod with claims may go. The one write: pre-binding a free PersistentVolume to a
# placed pod's claim (spec.claimRef), as kube-scheduler's VolumeBinding does; PVs are
# cluster-scoped, so no Role can grant it.
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [persistentvolumes]
  verbs: [get, list, watch, patch]
- apiGroups: [storage.k8s.io]
  resources: [storageclasses]
  verbs: [get, list, watch]
{{- if .Values.kueue.enabled }}
# Kueue's cluster-scoped objects: the admitted flavors' node labels and tolerations, and the
# WorkloadPriorityClass that gives a Workload its priority.
- apiGroups: [kueue.x-k8s.io]
  resources: [resourceflavors, workloadpriorityclasses]
  verbs: [get, list, watch]
{{- end }}
{{- end }}
