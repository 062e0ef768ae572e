"""JSON message specs for the inter-broker APIs kafka-python does not ship.

Written for kafkapy in the format of Kafka's message specs, for the one version of each that
kafkapy brokers send each other (Kafka 3.9's wire layout): LeaderAndIsr v7, UpdateMetadata v8,
StopReplica v4, ControlledShutdown v3. Field `versions` say when Kafka added each field;
`validVersions` lists only the version we use.
"""
