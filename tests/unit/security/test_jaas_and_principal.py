"""JAAS lines as Kafka parses them, and certificate DNs mapped to principals (KIP-371)."""

from __future__ import annotations

import pytest

from kafkapy.common.config_def import ConfigException
from kafkapy.common.jaas import JaasConfigError, parse_jaas_config, single_module
from kafkapy.server.security.principal import ANONYMOUS, SslPrincipalMapper, distinguished_name


def test_plain_login_module_with_users() -> None:
    module = single_module(
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a;b \\"q\\"";',
        "test",
    )
    assert module.name == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert module.flag == "required"
    assert module.options == {
        "username": "admin",
        "password": "admin-secret",
        "user_admin": "admin-secret",
        "user_alice": 'a;b "q"',
    }


def test_bare_values_comments_and_several_modules() -> None:
    modules = parse_jaas_config("/* c */ a.B optional debug=true; // trailing\n c.D sufficient;")
    assert [(m.name, m.flag, m.options) for m in modules] == [
        ("a.B", "optional", {"debug": "true"}),
        ("c.D", "sufficient", {}),
    ]
    with pytest.raises(JaasConfigError, match="1 module"):
        single_module("a.B required; c.D required;", "test")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('a.B required username="x"', "not terminated by semi-colon"),
        ("a.B username=x;", "control flag"),
        ("a.B required username=;", "Value not specified"),
        ("", "no login module"),
    ],
)
def test_malformed_jaas_lines(text: str, message: str) -> None:
    with pytest.raises(JaasConfigError, match=message):
        parse_jaas_config(text)


CERT = {
    "subject": ((("countryName", "US"),), (("organizationName", "kafkapy, Inc"),), (("commonName", "alice"),))
}


def test_dn_is_rfc2253_most_specific_first_and_escaped() -> None:
    assert distinguished_name(CERT) == "CN=alice,O=kafkapy\\, Inc,C=US"


def test_default_rule_keeps_the_full_dn_and_no_certificate_is_anonymous() -> None:
    mapper = SslPrincipalMapper.from_rules("DEFAULT")
    assert str(mapper.principal(CERT)) == "User:CN=alice,O=kafkapy\\, Inc,C=US"
    assert mapper.principal(None) is ANONYMOUS
    assert mapper.principal({}) is ANONYMOUS


def test_rules_first_match_wins_with_case_flags() -> None:
    mapper = SslPrincipalMapper.from_rules(
        "RULE:^CN=([a-zA-Z0-9.]*),O=Other.*$/$1@other/,RULE:^CN=(.*?),O=(.*?),C=(.*)$/$1@$3/U, DEFAULT"
    )
    assert mapper.name("CN=bob,O=Other Org,C=FR") == "bob@other"
    assert mapper.name("CN=alice,O=kafkapy,C=us") == "ALICE@US"
    assert mapper.name("OU=x") == "OU=x"
    assert SslPrincipalMapper.from_rules("RULE:^CN=(.*)$/$1/L").name("CN=Alice") == "alice"


def test_invalid_rules_are_a_config_error() -> None:
    with pytest.raises(ConfigException):
        SslPrincipalMapper.from_rules("RULE:abc")
