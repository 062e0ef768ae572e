"""Authentication for the broker's connections (KIP-651 TLS key stores, SASL PLAIN and SCRAM).

Kafka keeps this in its `ChannelBuilder`s: the security protocol of a listener decides what a
connection goes through before its requests reach KafkaApis. Here:

- `listener_security.py` reads a listener's settings (`listener.name.<l>.` prefixes first);
- `ssl_context.py` builds Python `ssl` contexts from Kafka's `ssl.*` keys, server and client side;
- `principal.py` names who is on the other end (`User:CN=...`, `User:alice`, `User:ANONYMOUS`);
- `jaas.py` parses `sasl.jaas.config` lines;
- `scram.py` is RFC 5802/7677 SCRAM and Kafka's credential format in `/config/users/<user>`;
- `sasl_state.py` is the server's SASL handshake as a transition table (no I/O);
- `sasl_server.py` runs that table for one connection; `sasl_processor.py` plugs it into the
  network layer (kafkapy/client/sasl_client.py is the client side used between brokers);
- `channel_builder.py` turns a listener's protocol and keys into what its connections go through;
- `acl.py` is Kafka's ACL model and AclAuthorizer's decision as pure functions, `acl_filter.py`
  the DescribeAcls/DeleteAcls filters, `acl_codes.py` their wire codes;
  `acl_authorizer.py` keeps ACLs in ZooKeeper with Kafka's znodes and change notifications;
  `authorizer.py` is the interface the API handlers ask (through apis/auth_helper.py) and the
  `authorizer.class.name` check.
"""
