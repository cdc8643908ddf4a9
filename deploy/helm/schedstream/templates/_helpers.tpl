{{- define "schedstream.name" -}}
{{- printf "%s" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{- define "schedstream.labels" -}}
app.kubernetes.io/name: schedstream
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "schedstream.secretName" -}}
{{- if .Values.secrets.create -}}{{ include "schedstream.name" . }}{{- else -}}{{ required "secrets.existingSecret is required when secrets.create is false" .Values.secrets.existingSecret }}{{- end -}}
{{- end -}}

{{/* The settings every schedstream container reads (services/config.py). */}}
{{- define "schedstream.env" -}}
- name: SCHEDSTREAM_KAFKA_BOOTSTRAP
  value: {{ .Values.kafka.bootstrap | quote }}
- name: SCHEDSTREAM_EVENTS_TOPIC
  value: {{ .Values.kafka.eventsTopic | quote }}
- name: SCHEDSTREAM_DECISIONS_TOPIC
  value: {{ .Values.kafka.decisionsTopic | quote }}
- name: SCHEDSTREAM_PARTITIONS
  value: {{ .Values.kafka.partitions | quote }}
- name: SCHEDSTREAM_LOG_FORMAT
  value: json
- name: SCHEDSTREAM_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: SCHEDSTREAM_DATA_DIR
  value: /var/lib/schedstream/state
- name: SCHEDSTREAM_DB_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "schedstream.secretName" . }}
      key: db-url
- name: SCHEDSTREAM_KAFKA_SECURITY_PROTOCOL
  value: {{ .Values.kafka.security.protocol | quote }}
{{- if hasPrefix "SASL_" .Values.kafka.security.protocol }}
- name: SCHEDSTREAM_KAFKA_SASL_MECHANISM
  value: {{ .Values.kafka.security.saslMechanism | quote }}
- name: SCHEDSTREAM_KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ include "schedstream.secretName" . }}
      key: kafka-sasl-username
- name: SCHEDSTREAM_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "schedstream.secretName" . }}
      key: kafka-sasl-password
{{- end }}
{{- if .Values.kafka.security.tlsSecret }}
- name: SCHEDSTREAM_KAFKA_SSL_CAFILE
  value: /etc/schedstream/kafka-tls/ca.crt
{{- if .Values.kafka.security.mutualTls }}
- name: SCHEDSTREAM_KAFKA_SSL_CERTFILE
  value: /etc/schedstream/kafka-tls/tls.crt
- name: SCHEDSTREAM_KAFKA_SSL_KEYFILE
  value: /etc/schedstream/kafka-tls/tls.key
{{- end }}
{{- end }}
{{- end -}}

{{- define "schedstream.volumeMounts" -}}
- name: state
  mountPath: /var/lib/schedstream
- name: config
  mountPath: /etc/schedstream/scheduler.yaml
  subPath: scheduler.yaml
  readOnly: true
{{- if .Values.kafka.security.tlsSecret }}
- name: kafka-tls
  mountPath: /etc/schedstream/kafka-tls
  readOnly: true
{{- end }}
{{- end -}}

{{- define "schedstream.volumes" -}}
- name: state
  emptyDir: {}
- name: config
  configMap:
    name: {{ include "schedstream.name" . }}
{{- if .Values.kafka.security.tlsSecret }}
- name: kafka-tls
  secret:
    secretName: {{ .Values.kafka.security.tlsSecret }}
{{- end }}
{{- end -}}

{{/* Probes on /readyz (ready: partitions assigned, state restored) and /healthz. */}}
{{- define "schedstream.probes" -}}
readinessProbe:
  httpGet: {path: /readyz, port: metrics}
  periodSeconds: 5
  failureThreshold: 3
livenessProbe:
  httpGet: {path: /healthz, port: metrics}
  initialDelaySeconds: 30
  periodSeconds: 10
  failureThreshold: 6
{{- end -}}
