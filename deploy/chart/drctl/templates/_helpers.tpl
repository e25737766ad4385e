{{/* Names, labels and the shared pod parts of the drctl chart. */}}

{{- define "drctl.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "drctl.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "drctl.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "drctl.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "drctl.selectorLabels" -}}
app.kubernetes.io/name: {{ include "drctl.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "drctl.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "drctl.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "drctl.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The topology file, parsed (for the drills: section). */}}
{{- define "drctl.topology" -}}
{{- .Values.topology | fromYaml | toJson -}}
{{- end -}}

{{/* Environment of every drctl container: Secrets for ${VAR}, a writable journal. */}}
{{- define "drctl.env" -}}
- name: DRCTL_CONFIG
  value: /etc/drctl/drctl.yaml
- name: XDG_STATE_HOME
  value: /var/lib/drctl
{{- range .Values.secretEnv }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ .key }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "drctl.volumeMounts" -}}
- name: topology
  mountPath: /etc/drctl
  readOnly: true
- name: state
  mountPath: /var/lib/drctl
- name: tmp
  mountPath: /tmp
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "drctl.volumes" -}}
- name: topology
  configMap:
    name: {{ include "drctl.fullname" . }}-topology
- name: state
  emptyDir: {}
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}
