"""Redaction: every credential in the corpus goes, lookalikes stay, and redacting twice changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xsky.security.redact import redact, redact_value

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).resolve().parents[1] / "fixtures" / "secrets" / "corpus.jsonl")
    .read_text()
    .splitlines()
]


@pytest.mark.parametrize(
    "record", [r for r in CORPUS if r["secrets"]], ids=lambda r: r["note"][:50]
)
def test_every_secret_in_the_corpus_is_removed(record: dict) -> None:
    out = redact(record["text"])
    for secret in record["secrets"]:
        assert secret not in out
    assert "[REDACTED:" in out


@pytest.mark.parametrize(
    "record", [r for r in CORPUS if not r["secrets"]], ids=lambda r: r["note"][:50]
)
def test_text_without_secrets_is_left_alone(record: dict) -> None:
    assert redact(record["text"]) == record["text"]


@pytest.mark.parametrize("record", CORPUS, ids=lambda r: r["note"][:50])
def test_redacting_twice_changes_nothing(record: dict) -> None:
    once = redact(record["text"])
    assert redact(once) == once


def test_redaction_is_idempotent_and_keeps_the_name_of_an_assignment() -> None:
    text = 'export DB_PASSWORD="hunter2-but-longer"\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz012345'
    once = redact(text)
    assert redact(once) == once
    assert "DB_PASSWORD=" in once and "hunter2" not in once
    assert "abcdefghijklmnop" not in once


def test_a_private_key_split_over_escaped_lines_and_nested_values_are_redacted() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7yq0mW3tQ9xT2bq\nZ1h2c3RyaW5nc2VjcmV0\n-----END RSA PRIVATE KEY-----"
    value = {"files": [{"content": key}], "n": 3}
    out = redact_value(value)
    assert "MIIEowIBAAKCAQEA7yq0mW3tQ9xT2bq" not in json.dumps(out) and out["n"] == 3  # type: ignore[index]
    cut = redact(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
    )  # no END line
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU" not in cut


@pytest.mark.parametrize(
    "text",
    [
        '"password":"with,comma;semi-s3cret"',
        'password = ("s3cretvalue")',
        'password: "p@ss w0rd long"',
        'PASSWORD="hello world secret"',
        "Cookie: sessionid=abcdef1234567890; csrftoken=zzzzzzzz",
        "passwords: hunter2xyz,",
    ],
)
def test_a_whole_value_goes_however_it_is_quoted_or_punctuated(text: str) -> None:
    out = redact(text)
    assert "[REDACTED:" in out
    for word in (
        "comma",
        "semi",
        "s3cret",
        "w0rd",
        "hello",
        "world",
        "abcdef1234567890",
        "hunter2xyz",
    ):
        assert word not in out


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=${DB_PASSWORD}",
        "password: <your-password>",
        'token = os.environ["TOKEN"]',
        "PWD=/home/me/project",
        "max_tokens=4096",
    ],
)
def test_placeholders_and_lookalike_names_stay(text: str) -> None:
    assert redact(text) == text


# -- Azure, GCP and the high-entropy rule ---------------------------------------------------------
# Realistic shapes, fake values: each was generated for this file and is no one's credential.

AZURE_STORAGE_KEY = (
    "dsWjHJ8nK6e52ebgyLJ1SGLF4lRRJRsE/PzCmgvqaRXAIXWvELgQGBz6ulAM/km0HXnI3f3tKHzHT58eA4T8XA=="
)
SAS_SIG = "eQCQUr45ZGrwCHD51M56%2B6TeNTtdBEG3v3WPPkP1M0Q%3D"
ENTRA_SECRET = "jwT8Q~Szod9lDVlWV0rv5qMl27O2iSiG49W5ypwt"
BUS_KEY = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo="
GCP_KEY_ID = "3f9c0e1d2b7a4c5e8f6a9b0c1d2e3f4a5b6c7d8e"
GCP_KEY_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"
GOCSPX = "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"
GCP_SA_B64 = "ewogICJ0eXBlIjogInNlcnZpY2VfYWNjb3VudCIsCiAgInByb2plY3RfaWQiOiAic2hvcC1wcm9kIgp9"


@pytest.mark.parametrize(
    ("text", "secret", "rule", "kept"),
    [
        (
            "DefaultEndpointsProtocol=https;AccountName=shopprodstore;"
            f"AccountKey={AZURE_STORAGE_KEY};EndpointSuffix=core.windows.net",
            AZURE_STORAGE_KEY,
            "azure-storage-key",
            "AccountName=shopprodstore;AccountKey=",
        ),
        (
            f"the portal shows key1 = {AZURE_STORAGE_KEY} (rotate it yearly)",
            AZURE_STORAGE_KEY,
            "azure-storage-key",
            "rotate it yearly",
        ),
        (
            "AccountEndpoint=https://shop-cosmos.documents.azure.com:443/;AccountKey=C2y6yDjf5R+ob0N8A7Cgv30VRDJIWEHLM4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIwJw;",
            "C2y6yDjf5R+ob0N8A7Cgv30VRDJIWEHLM4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIwJw",
            "azure-storage-key",
            "AccountEndpoint=https://shop-cosmos.documents.azure.com:443/",
        ),
        (
            "Endpoint=sb://shop-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
            f"SharedAccessKey={BUS_KEY};EntityPath=orders",
            BUS_KEY,
            "azure-shared-access-key",
            "SharedAccessKeyName=RootManageSharedAccessKey;",
        ),
        (
            "curl 'https://shopprodstore.blob.core.windows.net/exports/orders.csv?sv=2022-11-02&ss=b&srt=co"
            f"&sp=rl&se=2026-12-01T00:00:00Z&spr=https&sig={SAS_SIG}' -o orders.csv",
            SAS_SIG,
            "azure-sas",
            "exports/orders.csv?sv=2022-11-02",
        ),
        (
            f"SharedAccessSignature sr=https%3A%2F%2Fshop-bus.servicebus.windows.net%2Forders&sig={SAS_SIG}&se=1764400000&skn=send",
            SAS_SIG,
            "azure-sas",
            "&se=1764400000&skn=send",
        ),
        (
            f"the app registration's secret is {ENTRA_SECRET}, valid 180 days",
            ENTRA_SECRET,
            "azure-client-secret",
            "valid 180 days",
        ),
        (
            '{"type": "service_account", "project_id": "shop-prod-4471", '
            f'"private_key_id": "{GCP_KEY_ID}", '
            f'"private_key": "-----BEGIN PRIVATE KEY-----\\n{GCP_KEY_BODY}\\n-----END PRIVATE KEY-----\\n", '
            '"client_email": "ci@shop-prod-4471.iam.gserviceaccount.com"}',
            GCP_KEY_ID,
            "gcp-private-key-id",
            '"client_email": "ci@shop-prod-4471.iam.gserviceaccount.com"',
        ),
        (  # the same file as a tool's output inside a JSONL transcript: its quotes escaped
            f'{{\\"type\\": \\"service_account\\", \\"private_key_id\\": \\"{GCP_KEY_ID}\\"}}',
            GCP_KEY_ID,
            "gcp-private-key-id",
            '\\"type\\": \\"service_account\\"',
        ),
        (
            f'{{"installed": {{"client_id": "8127-q3l.apps.googleusercontent.com", "client_secret": "{GOCSPX}"}}}}',
            GOCSPX,
            "gcp-oauth-secret",
            '"client_id": "8127-q3l.apps.googleusercontent.com"',
        ),
        (f"paste {GOCSPX} into the form", GOCSPX, "gcp-oauth-secret", "into the form"),
        (f"GCP_SA_JSON_B64={GCP_SA_B64}", GCP_SA_B64, "gcp-service-account", "GCP_SA_JSON_B64="),
    ],
    ids=lambda v: v if isinstance(v, str) and v.startswith(("azure", "gcp")) else None,
)
def test_azure_and_gcp_credentials_are_redacted_by_their_own_rule(
    text: str, secret: str, rule: str, kept: str
) -> None:
    out = redact(text)
    assert secret not in out and f"[REDACTED:{rule}]" in out
    assert kept in out  # the rest of the connection string, URL or JSON still reads
    assert redact(out) == out


def test_a_service_account_files_private_key_is_removed_with_its_escaped_line_breaks() -> None:
    key_file = json.dumps(
        {
            "type": "service_account",
            "private_key_id": GCP_KEY_ID,
            "private_key": f"-----BEGIN PRIVATE KEY-----\n{GCP_KEY_BODY}\nmore\n-----END PRIVATE KEY-----\n",
        }
    )
    assert "\\n" in key_file  # json.dumps writes the line breaks as \n escapes
    out = redact(key_file)
    assert GCP_KEY_BODY not in out and GCP_KEY_ID not in out
    assert '"type": "service_account"' in out


@pytest.mark.parametrize(
    "text",
    [
        'VENDOR_WEBHOOK = "x8Kd02LmQp7Zr4Tn9Wv3Yb6Hc1Fj5Gs0"',
        'config = {"endpoint": "https://api.vendor.io", "auth": "Qm9vbXNoYWthbGFrYTEyMzQ1Njc4OTA"}',
        "mailgun: 3d7c2f1e9a8b4c6d5e0f1a2b3c4d5e6f7a",  # hex, but no digest's length
        "X-Amz-Signature=f2c1e0d9b8a7968574635241302f1e0d9c8b7a69584736251403f2e1d0c9b8a7",
        "export RELAY=tv1jt7u5wehzhqekrjni54o5atuh8rwl5erjbbv1",
        "ocp_apim: 'aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY'",
    ],
)
def test_a_random_looking_value_is_redacted_whatever_its_name(text: str) -> None:
    out = redact(text)
    assert "[REDACTED:high-entropy]" in out, out
    name = text.split("=")[0].split(":")[0].strip("{ ")
    assert out.startswith(name)  # the name of the assignment stays
    assert redact(out) == out


@pytest.mark.parametrize(
    "text",
    [
        # ordinary words and identifiers
        'class_name = "PaymentServiceClientFactory2"',
        "name: my_long_function_name_v2",
        "metric: K8S_POD_VOLUME_INODE_COUNT_V2",
        "description: Summarize the three newest articles about durable workflows",
        # paths and URLs
        "CACHE_DIR=/var/lib/xsky/cache/artifacts2",
        "homepage: https://github.com/acme/shop/blob/main/src/components/UserProfileCard.tsx",
        'url = "http://localhost:8233/namespaces/default/workflows/xsky-demo-20261128-a1b2c3"',
        "see https://files.example.com:8443/AbC123xYz789QrS456tUv0 for the export",
        # UUIDs, trace ids and providers' object ids
        "request_id=3fa85f64-5717-4562-b3fc-2c963f66afa6 trace=0199a3c2-7e51-7b20-9c4d-1f2e3d4c5b6a",
        "traceparent: 00-342ab7b8d2c5443b8128e33008430b68-cee16c58a9277290-01",
        '"id": "msg_01NlD8GFqZSALEga3nWKUjpH", "requestId": "req_011C4jxJvHXIpl6pdWrDOFwG"',
        '"tool_call_id": "call_wKayJlcYV12NiadiZuJXxcfx", "buildId": "88459c572090f5d0245866a6bc712dd5"',
        # git SHAs and digests
        "commit e175a51493bceb2e629bd25775a88250411c7731\nAuthor: Dana Kim <dana@example.com>",
        "e175a51 fix cart rounding\n41ddabc merge release/2.3",
        '{"sha": "e175a51493bceb2e629bd25775a88250411c7731", "parents": 1}',
        "head: c250e24a4b0f1d2e3f4a5b6c7d8e9f0a1b2c3d4e",  # 40 hex: a SHA's length
        "digest: sha256:4895666a3d6748d8eecb38fbbde00cb960bb22f7e1758423d879d97effbe3e49",
        '"integrity": "sha512-pz0RJDFJ4obiJ+lucgsLPJ/afFjhac7KGpbxT/7BoUoq1lW8GPYI3ax+2ps4IfwZ0vD91Iau9Ufuq7U7usUZ5h=="',
        "Change-Id: I8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b",
        # numbers, dates and shell defaults
        "timestamp=20261128091403123456 started=2026-11-28T09:14:03Z",
        'echo "${DB_HOST:-db01.internal.example.com}"',
    ],
)
def test_ids_digests_paths_urls_and_words_are_not_taken_for_secrets(text: str) -> None:
    assert redact(text) == text


# -- code is not a secret: ordinary lines that look like assignments to secret-ish names -----------
# Every line below is something a skill would quote; none holds a credential.
CODE_LINES = [
    # Python
    "token = Store.mint(id)",
    "token = TokenStore.mint(user.id, scopes=['read'])",
    "api_key = self.api_key",
    "self.token = token",
    "password = getpass.getpass()",
    "secret_key = settings.SECRET_KEY",
    "access_token = resp.json()['access_token']",
    "token = jwt.encode(payload, key, algorithm='HS256')",
    "SECRET_KEY = env('SECRET_KEY')",
    "api_key: str = Field(default='', repr=False)",
    "password: Optional[str] = None",
    "token: str | None = None",
    "api_key: SecretStr",
    "def login(username: str, password: SecretStr) -> Session:",
    "password_hash = hash_password(raw_password)",
    "token = tokens[0]",
    "refresh_token = await client.refresh(session)",
    "token_expiry = timedelta(hours=1)",
    "max_token_length = 512",
    "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
    "credentials = service_account.Credentials.from_service_account_file(path)",
    "api_key = kwargs.get('api_key')",
    "secret = secrets.token_hex(32)",
    "token = request.headers.get('Authorization', '').removeprefix('Bearer ')",
    'log.info("token=%s", token)',
    'print(f"token={token}")',
    'url = f"https://api.example.com/v1/items?api_key={api_key}"',
    'fmt = "%H:%M:%S"',
    'TIME_FMT_KEY = "%H:%M:%S"',
    'token_format = "%Y-%m-%dT%H:%M:%S"',
    'msg = "password: %(password)s" % values',
    "password = user_password",
    "token = access_token",
    "auth_key = derive_key(master, salt)",
    "session_key = os.urandom(16)",
    "self.secret = secret",
    "password_field = forms.CharField(widget=forms.PasswordInput)",
    "token_type = 'bearer'",
    "token_url = 'https://auth.example.com/oauth/token'",
    "API_KEY_HEADER = 'X-Api-Key'",
    "password_min_length = 12",
    "secret_name = 'prod/db'",
    "cache_key = make_key(user_id, page)",
    "if token == expected_token:",
    "return {'token': token, 'expires_in': ttl}",
    "key_func = lambda item: item.created_at",
    "primary_key = True",
    "foreign_key = models.ForeignKey(User, on_delete=models.CASCADE)",
    # JavaScript / TypeScript
    "const token = await getToken();",
    "const apiKey = process.env.API_KEY;",
    "let password = form.elements.password.value;",
    "const secret = new Secret(config.secretName);",
    "token: this.token,",
    "apiKey: apiKey,",
    "headers: { Authorization: `Bearer ${token}` },",
    "const { accessToken, refreshToken } = useAuth();",
    "password: string;",
    "apiKey?: string;",
    "token: z.string().min(1),",
    "export const SESSION_KEY = Symbol('session');",
    "const tokenCount = tokens.length;",
    "secret: options.secret ?? defaultSecret,",
    "onPasswordChange={(e) => setPassword(e.target.value)}",
    "this.apiKey = apiKey;",
    "const key = `${prefix}:${id}`;",
    "token => token.trim()",
    # Go
    "token := auth.NewToken(userID)",
    'apiKey := os.Getenv("API_KEY")',
    "password, err := reader.ReadString('\\n')",
    "secret := []byte(cfg.Secret)",
    'Token string `json:"token"`',
    'APIKey string `yaml:"api_key"`',
    "tokenSource := oauth2.StaticTokenSource(tok)",
    'key := fmt.Sprintf("%s/%s", bucket, name)',
    'if token == "" {',
    # Rust
    "let token = Token::new(&id);",
    'let api_key = std::env::var("API_KEY")?;',
    "api_key: config.api_key.clone(),",
    "password: String,",
    "secret: Option<String>,",
    'let key = format!("{}:{}", ns, name);',
    "token: &str,",
    "pub fn verify(token: &Token) -> Result<Claims, Error> {",
    # YAML / config
    "password: ${{ secrets.DB_PASSWORD }}",
    'token: "{{ vault_github_token }}"',
    "api_key: !vault api_key",
    "secretName: db-credentials",
    "tokenizer: bert-base-uncased",
    "token_url: https://auth.example.com/oauth/token",
    "password_policy: strict",
    "secret_ref: prod-db-secret",
    "passwordSecretRef: { name: pg, key: password }",
    "max_tokens: 4096",
    "token_limit: 100000",
    # shell
    'export GITHUB_TOKEN="$(gh auth token)"',
    "TOKEN=$(cat ~/.config/app/token)",
    "export API_KEY=${API_KEY:-}",
    'PASSWORD="$1"',
    "read -s -p 'Password: ' password",
    'curl -H "Authorization: Bearer $TOKEN" https://api.example.com/me',
    'echo "token=$TOKEN"',
    "for key in $(jq -r 'keys[]' creds.json); do",
    # logs and test output
    "PASS: Build succeeds with --release",
    "PASSED: test_login_password",
    "PASS tests/test_auth.py::test_token_refresh",
    "Tokens: 12,345 in, 2,048 out",
    "token usage: 4.5k",
    "input_tokens: 1,234",
    "[auth] token refreshed: expires_in=3600",
    "cache_read_tokens=123456",
    "Secret: none found",
    "2026-11-28 09:14:03 INFO password reset requested for user_id=42",
    "WARN api_key: missing, falling back to anonymous",
]


def test_a_corpus_of_ordinary_code_lines_loses_nothing_to_redaction() -> None:
    assert len(CODE_LINES) >= 100 and len(set(CODE_LINES)) == len(CODE_LINES)
    eaten = [(line, redact(line)) for line in CODE_LINES if redact(line) != line]
    assert eaten == [], "\n".join(f"{a!r} -> {b!r}" for a, b in eaten)


@pytest.mark.parametrize(
    "text",
    [
        'password: str = "hunter2-longer"',  # an annotation, then the literal
        "token = 'tok3nValue99'",
        "DB_PASSWORD=correcthorsebattery",
        "api_key: Zq8pXyW3",
        'secret = "p%40ssw0rd!"',  # a URL-escaped "@", not a format
        "DB_PASSWORD=hunter2_prod",  # .env: a bare word is a string
        "export API_TOKEN=deploy.bot.2026",
        "  password: hunter2_prod",  # YAML
        "api_key: aBcD3fG9xY",  # YAML, mixed case
    ],
)
def test_literal_values_of_secret_names_still_go(text: str) -> None:
    out = redact(text)
    assert "[REDACTED:secret]" in out, out


# Fake keys, in the shapes a security review got past the rules with.
_ANT = "sk-ant-api03-" + "Q7mZp2LxW9vK4rT8yB3nC6dF1gH5jJ0s"
_AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
_GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("ghp_a1B2c3D4e5F6g7\u200bH8i9J0k1L2m3N4o5P6q7R8", "H8i9J0k1"),  # a zero-width space
        ("https://x.example/?k=" + _GHP.replace("_", "%5F"), "a1B2c3D4"),  # percent-encoded
        (__import__("base64").b64encode(f"export KEY={_ANT}\n".encode()).decode(), "ZXhwb3J0"),
        (_ANT.encode().hex(), "736b2d616e74"),
        (f"the secret access key {_AWS} was set", _AWS),  # bare, in prose
        (f"NAME      VALUE\nprod-key  {_AWS}", _AWS),  # a column of a table
        (f"docker login -p {_AWS}x registry.example", _AWS),
        ("podman login --username u -p 'hunter2hunter2' quay.io", "hunter2"),
        (
            '{"out": "\\u0073k\\u002dant\\u002dapi03\\u002dQ7mZp2LxW9vK4rT8yB3nC6dF1gH5jJ0s"}',
            "Q7mZp2",
        ),
    ],
)
def test_a_secret_hidden_by_encoding_invisible_characters_or_no_name_is_redacted(
    text: str, gone: str
) -> None:
    out = redact(text)
    assert gone not in out and "[REDACTED:" in out, out


@pytest.mark.parametrize(
    "text",
    [
        "commit 1f3a9b7c2d4e5f60718293a4b5c6d7e8f9012345 fixed the build",  # a sha: binary as hex
        "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
        "integrity sha512-AbCdEf0123456789/abcdefGHIJKLmnopQRSTuvwxyz0123456789+AbCdEfGhIj==",
        "see src/components/Button/index.tsx and lib/utils/a1b2/c.py here",
        "path /usr/lib/python3.11/site-packages/foo/Bar9.py",
        "SGVsbG8gd29ybGQsIHRoaXMgaXMgYmFzZTY0IG9mIHBsYWluIHRleHQ=",  # base64 of plain words
        "100%20done and 50%25 left",
    ],
)
def test_what_only_looks_encoded_is_kept(text: str) -> None:
    assert redact(text) == text


def test_text_with_no_hidden_secret_is_kept_exactly() -> None:
    """The reading that finds keys behind invisible characters or encodings must not change
    text that hides none: an agent's log keeps what it saw (a right-to-left override, a
    percent-escape, a JSON escape)."""
    for text in ("invoice\u202egnp.exe", "100%41 done", "say \\u0041", "a\u200bb " * 10):
        assert redact(text) == text


def test_the_rest_of_a_key_wrapped_onto_the_next_line_is_redacted_too() -> None:
    wrapped = "key is sk-ant-api03-Q7mZp2LxW9\nvK4rT8yB3nC6dF1gH5jJ0s\nnext line"
    out = redact(wrapped)
    assert "vK4rT8yB3nC6dF1gH5jJ0s" not in out and out.endswith("\nnext line")
    # a word on the next line is a word
    kept = redact("key is sk-ant-api03-Q7mZp2LxW9vK4rT8yB3nC6dF1gH5jJ0s\nSuccessfully logged in")
    assert kept.endswith("\nSuccessfully logged in")
