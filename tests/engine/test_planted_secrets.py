"""Secrets planted on the very line a diagnosis quotes reach no output: terminal, JSON, Markdown
(in process and through the CLI), and the file names and notes around them. The forms are more
than the catalogue's examples: each is written the way a real tool prints it."""
from __future__ import annotations

import base64
import json

import pytest

from firstfault.kb import load_knowledge_base
from firstfault.pipeline import diagnose_texts
from firstfault.render.contract import render as render_json
from firstfault.render.markdown import render as render_markdown
from firstfault.render.terminal import TerminalReport

from .conftest import run_cli

KB = load_knowledge_base()
FAULT = "[rank1]: RuntimeError: CUDA error: device-side assert triggered"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7qZ3nXm1S9FvV2k"
DOCKER_AUTH = base64.b64encode(b"ci-bot:Xq7-registry-pw").decode()

# (name, the text planted after the fault, the secret that must not come out)
PLANTED = [
    ("slack-bot", "SLACK_BOT_TOKEN=xoxb-30802300253-157546453355-ot7UGAoKD1AFfDKZxCKu7SPC", "ot7UGAoKD1AFfDKZxCKu7SPC"),
    ("slack-user", "token xoxp-61703282904-87211601784-683288513442-acfae28f43fcc082921e", "acfae28f43fcc082921e"),
    ("slack-webhook", "alert via https://hooks.slack.com/services/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", "eBr7CVpQ8bCvz5PkcQLaNRDC"),
    ("jwt", "id_token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJjaS1ib3QifQ.Qy8x3nW2vYkP0aFz7LmR4tG1uHs9", "Qy8x3nW2vYkP0aFz7LmR4tG1uHs9"),
    ("pem-inline", '"private_key": "-----BEGIN PRIVATE KEY-----\\n' + PEM_BODY + '\\n-----END PRIVATE KEY-----\\n"', PEM_BODY),
    ("ssh-key", "-----BEGIN OPENSSH PRIVATE KEY-----b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"),
    ("gcp-key-id", '{"type": "service_account", "private_key_id": "21cdb46b241b81e040ef745c77daf135c9a38407"}', "21cdb46b241b81e040ef745c77daf135c9a38407"),
    ("azure-account-key", "DefaultEndpointsProtocol=https;AccountName=ckpt;AccountKey=G4sYKjWCg/SvwzonLVxEqL3r9FcreV2k9QvUh6h+QvEZU4YUWisJEpmiBZAOj3TB==;EndpointSuffix=core.windows.net",
     "G4sYKjWCg/SvwzonLVxEqL3r9FcreV2k9QvUh6h"),
    ("azure-sas", "GET https://ckpt.blob.core.windows.net/c/m.pt?sv=2022-11-02&sp=r&sig=iFstJtuxD13NGp8eYjtyvI3FOBrHlt%2BC8soaxyQ81%3D 403", "iFstJtuxD13NGp8eYjtyvI3FOBrHlt"),
    ("basic-auth", 'curl -H "Authorization: Basic Y2ktYm90OjlpVFBERDZWamtiaUgxSHU=" https://registry.internal/', "Y2ktYm90OjlpVFBERDZWamtiaUgxSHU"),
    ("bearer", "Authorization: Bearer 7Fq2xLm9Pz4Rt8Wk1Vb6Nc3Yd0", "7Fq2xLm9Pz4Rt8Wk1Vb6Nc3Yd0"),
    ("argv-password", "python train.py --password hunter2-pw --lr 3e-4", "hunter2-pw"),
    ("argv-password-eq", "python train.py --password=Winter2026x --lr 3e-4", "Winter2026x"),
    ("argv-api-key", "mlflow server --api-key AbCd1234EfGh", "AbCd1234EfGh"),
    ("argv-short-token", "huggingface-cli upload --token tkn9 org/model", "tkn9"),
    ("argv-list", "[launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u', 'train.py', '--local_rank=1', '--password', 'pw-in-argv'] exits with return code = -9", "pw-in-argv"),
    ("json-token", '{"token": "tok_5eCr3tValue99", "user": "ci"}', "tok_5eCr3tValue99"),
    ("env-key", "env STRIPE_API_KEY=plainkey77 OTHER=1", "plainkey77"),
    ("env-secret", "MY_APP_SECRET=s3cret-app-value", "s3cret-app-value"),
    ("env-token", "CI_DEPLOY_TOKEN=dt-88x2", "dt-88x2"),
    ("env-password", "DB_PASSWORD=p@ss/w:rd!", "p@ss/w:rd!"),
    ("boto-repr", "Credentials(access_key='AKIABRTOUCMV55IYRQBV', secret_key='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', token=None)", "IoGHp3YguHf8xTTWI+91m8Apbu8eIyH8ZIz1L9CD"),
    ("aws-key-id", "aws_access_key_id=AKIABRTOUCMV55IYRQBV", "AKIABRTOUCMV55IYRQBV"),
    ("aws-sts", "using ASIAEJKRA4YEG7FFAUPG", "ASIAEJKRA4YEG7FFAUPG"),
    ("aws-secret-ini", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"),
    ("wandb-login-call", 'wandb.login(key="55a4b75765b11acb30536e5d6aaee39db11f7664")', "55a4b75765b11acb30536e5d6aaee39db11f7664"),
    ("wandb-cli", "+ wandb login 66b5c86876c22bdc41647f6e7bbff40ec22f8775", "66b5c86876c22bdc41647f6e7bbff40ec22f8775"),
    ("wandb-env", "WANDB_API_KEY=77c6d97987d33ced52758a7f8ccaa51fd33a9886", "77c6d97987d33ced52758a7f8ccaa51fd33a9886"),
    ("netrc", "machine api.wandb.ai login user password 88d7ea8a98e44dfe63869b8a9ddbb62ae44ba997", "88d7ea8a98e44dfe63869b8a9ddbb62ae44ba997"),
    ("gitlab", "remote: HTTP Basic: Access denied for glpat-DZVGjbziUeMDMcbxsrhO", "glpat-DZVGjbziUeMDMcbxsrhO"),
    ("stripe-live", 'stripe.api_key = "sk_live_Xm2ufRrM85OjZHd419oNH5Pb"', "sk_live_Xm2ufRrM85OjZHd419oNH5Pb"),
    ("stripe-restricted", "using rk_live_WdP2dAhZlyJ9LPMFeTLDpTEu", "rk_live_WdP2dAhZlyJ9LPMFeTLDpTEu"),
    ("npm", "//registry.npmjs.org/:_authToken=npm_ooyitqKhtrNIS2pXFxF7w7B0IEMDF7QCmXnG", "npm_ooyitqKhtrNIS2pXFxF7w7B0IEMDF7QCmXnG"),
    ("google", "generativelanguage.googleapis.com/v1/models?key=AIzaQ4TGLQjV206Hs7jrdZVf4CH92y6PCEksBOR", "AIzaQ4TGLQjV206Hs7jrdZVf4CH92y6PCEksBOR"),
    ("openai", "OPENAI_API_KEY=sk-zqLTU4VHgXzFGRtrexqgBYOBlnzKknZiPsvB423tG8bYDz84", "zqLTU4VHgXzFGRtrexqgBYOBlnzKknZiPsvB423tG8bYDz84"),
    ("openai-project", "Incorrect API key provided: sk-proj-Yfw9n8Ow6dbDqI0EuHjxq1sndWOEcb6gf36q_TJMIjjeGkEi", "Yfw9n8Ow6dbDqI0EuHjxq1sndWOEcb6gf36q"),
    ("anthropic", "anthropic key sk-ant-api03-DIc6bb61i_Fawhs57AoUc9yBgTB2yhhC2rqB3zJE4rkdXaeGLymk-Rr2Uep_XCx", "DIc6bb61i_Fawhs57AoUc9yBgTB2yhhC2rqB3zJE4"),
    ("huggingface", 'login(token="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")', "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"),
    ("github-pat", "git clone https://ghp_iwR2fvtn64VmykC1rbV9JcNToe7OqxS7g4Bd@github.com/org/repo", "ghp_iwR2fvtn64VmykC1rbV9JcNToe7OqxS7g4Bd"),
    ("github-oauth", "GH_TOKEN=gho_PItTWClrnoUwRP1IP2hrqQoHvMyBvetmYcu4", "gho_PItTWClrnoUwRP1IP2hrqQoHvMyBvetmYcu4"),
    ("github-app", "token ghs_qg1OaHuil7xViiSarRRfiV22huY9jJBKMsfF", "ghs_qg1OaHuil7xViiSarRRfiV22huY9jJBKMsfF"),
    ("github-fine-grained", "github_pat_1180488CCIQJTK924L5W67_w7Bh76nUF6iojZJmd4WSThBWP1iuvMot6j7bWXZOmsZk", "w7Bh76nUF6iojZJmd4WSThBWP1iuvMot6j7bWXZOmsZk"),
    ("databricks", "DATABRICKS_HOST=adb-1.azuredatabricks.net token dapi6e81686493d68986a25bb683d590e7a7", "dapi6e81686493d68986a25bb683d590e7a7"),
    ("twilio", "TWILIO_AUTH_TOKEN=69c8770a0d2b916b82185ece9d1d883e sid SKd7be784221bb6c878a13f0686593fad6", "69c8770a0d2b916b82185ece9d1d883e"),
    ("sendgrid", "mail via 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 failed", "72RRSRka6hq3B4S9ZNbTfPa2YSiVbppZUtLgbL"),
    ("mailgun", "mailgun api:key-525873cb9d08cbe7369d0315368e4a19", "525873cb9d08cbe7369d0315368e4a19"),
    ("digitalocean", "doctl -t dop_v1_4cec3fd4fa2edf3578afdd2427bed097af7e05c72a6554b7c34ddc2e835dcc4a", "4cec3fd4fa2edf3578afdd2427bed097af7e05c72a6554b7c34ddc2e835dcc4a"),
    ("heroku", "heroku key HRKU-AACU5-vI_xDN-tbNmBWIwdXr3CpLE7E8nwtiliIusX2bzg_YJY1nlXsSDqD_", "vI_xDN-tbNmBWIwdXr3CpLE7E8nwtiliIusX2bzg"),
    ("heroku-uuid", "HEROKU_API_KEY=7ac1f8cf-af64-db92-c13d-acf23da6ef34", "7ac1f8cf-af64-db92-c13d-acf23da6ef34"),
    ("pypi", "twine -p pypi-AgEIcHlwaS5vcmco1g0ZCw7_KAfQW24a2DLwzdXN34VOicJ_f8bQB3ad68OVS_Lr81fsljsQQBu8", "AgEIcHlwaS5vcmco1g0ZCw7_KAfQW24a2DLwzdXN34VOicJ"),
    ("docker-auths", '{"auths": {"registry.internal:5000": {"auth": "' + DOCKER_AUTH + '"}}}', DOCKER_AUTH),
    ("dockercfg", '{"https://index.docker.io/v1/": {"auth": "' + DOCKER_AUTH + '", "email": "ci@example.com"}}', DOCKER_AUTH),
    ("docker-pat", "echo dckr_pat_ifaIA4a_pHCwm2OzKHpIQo58qBl | docker login", "dckr_pat_ifaIA4a_pHCwm2OzKHpIQo58qBl"),
    ("kube-token", "token: kube-sa-token-7f8e9d0c1b2a", "kube-sa-token-7f8e9d0c1b2a"),
    ("kube-client-key", "client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpZRlFtckIy", "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ"),
    ("postgres-dsn", "could not connect to postgres://trainer:s3cr/et@pa:ss@db.internal:5432/runs", "s3cr/et@pa:ss"),
    ("mysql-dsn", "mysql://root:R00t-pw@mysql-0:3306/exp", "R00t-pw"),
    ("mongodb-srv", "MONGO_URI=mongodb+srv://ml:Hunt3r2x@cluster0.ab1cd.mongodb.net/?retryWrites=true", "Hunt3r2x"),
    ("redis", "Error connecting to redis://:p4ssw0rd-redis@cache-01:6379/0", "p4ssw0rd-redis"),
    ("query-token", "GET https://api.example.com/v1/data?page=2&token=t0k3n-in-query&limit=10", "t0k3n-in-query"),
    ("query-key", "https://maps.example.com/api?q=x&key=k3y-in-query", "k3y-in-query"),
    ("access-token-fragment", "redirect to /callback#access_token=AcCeSs123tok&expires_in=3600", "AcCeSs123tok"),
    ("cookie", "Cookie: session=9a8b7c6d5e4f; csrftoken=Zx81QwCsrf", "9a8b7c6d5e4f"),
    ("set-cookie", "Set-Cookie: sessionid=abc123def456ghi; Path=/; HttpOnly", "abc123def456ghi"),
    ("password-quotes", "config = {'password': 'it\\'s\"q/u@o:te', 'host': 'db'}", "q/u@o:te"),
    ("password-spaces-quoted", 'password: "correct horse battery staple"', "battery staple"),
    ("vault", "VAULT_TOKEN=hvs.lzx8ApvqzsLku_3p1Tvf9zzvMHKDr47EXRaKaQGh8Atxk5", "lzx8ApvqzsLku_3p1Tvf9zzvMHKDr47EXRaKaQGh8Atxk5"),
    ("x-api-key", "curl -H 'x-api-key: 4f7Gh2Jk9Lm3' https://api.internal", "4f7Gh2Jk9Lm3"),
    ("auth-token-header", 'curl -H "X-Auth-Token: abc123def456xyz" https://api.internal', "abc123def456xyz"),
    ("mysql-option", "mysql -h db -u root -pHunter2Sql training", "Hunter2Sql"),
    ("curl-user", "curl -u ci-bot:t0k3n_value https://registry.internal/v2/", "t0k3n_value"),
    ("sentry-dsn", "SENTRY_DSN=https://a1b2c3d4e5f60718293a4b5c6d7e8f90@o123.ingest.sentry.io/456", "a1b2c3d4e5f60718293a4b5c6d7e8f90"),
    ("unknown-format", "X_CUSTOM_HEADER=EiGrl8iGviTDTgoQ4nQLuGhWqn5LYWQOkmpqhk7a sent", "EiGrl8iGviTDTgoQ4nQLuGhWqn5LYWQOkmpqhk7a"),
    ("email", "wandb: Currently logged in as: alice.smith@example.com", "alice.smith@example.com"),
    ("home-path", "FileNotFoundError: '/home/alice/data/train.jsonl'", "alice"),
]


def _outputs(diagnosis) -> dict[str, str]:
    return {"terminal": TerminalReport(KB).render(diagnosis), "json": render_json(diagnosis),
            "markdown": render_markdown(diagnosis, KB)}


def _leaks(secret: str, text: str) -> bool:
    if secret in text:
        return True
    # a partial leak (a password cut at its first '/', a key minus its last characters)
    window = 10
    return len(secret) >= 16 and any(secret[start:start + window] in text for start in range(len(secret) - window + 1))


@pytest.mark.parametrize("name,planted,secret", PLANTED, ids=[item[0] for item in PLANTED])
def test_a_secret_on_the_quoted_line_reaches_no_output(name, planted, secret):
    line = f"{FAULT} ({planted})"
    diagnosis = diagnose_texts([("rank1.log", line + "\n")], kb=KB)
    assert diagnosis.primary is not None and diagnosis.primary.failure_id == "cuda-device-side-assert"
    quoted = diagnosis.initiating.text
    assert "device-side assert triggered" in quoted and quoted != line  # the line is quoted, masked
    for output_name, text in _outputs(diagnosis).items():
        check = text if name != "home-path" else text.replace("/home/<user>", "")
        if name == "home-path":
            assert "/home/alice" not in text, output_name
        else:
            assert not _leaks(secret, check), f"{name} leaked in {output_name}: {text[:2000]}"


def test_the_planted_set_through_the_cli_all_formats(tmp_path):
    """All forms in one job, one rank file each, read through the command line."""
    for index, (_, planted, _) in enumerate(PLANTED):
        (tmp_path / f"rank{index}.log").write_text(f"[rank{index}]: RuntimeError: CUDA error: device-side assert triggered ({planted})\n")
    for output_format in ("terminal", "json", "markdown"):
        result = run_cli("diagnose", str(tmp_path), "--format", output_format)
        assert result.returncode == 1, result.stderr.decode()
        output = result.stdout.decode() + result.stderr.decode()
        assert "device-side assert" in output
        for name, _, secret in PLANTED:
            if name == "home-path":
                assert "/home/alice" not in output
            else:
                assert not _leaks(secret, output), f"{name} leaked in {output_format}"


def test_the_paths_given_are_masked_too(tmp_path):
    """A log under /home/<name>/ is named without the name, in every format."""
    home = tmp_path / "home" / "carol" / "job"
    home.mkdir(parents=True)
    (home / "rank1.log").write_text(FAULT + "\n")
    for output_format in ("terminal", "json", "markdown"):
        output = run_cli("diagnose", str(home), "--format", output_format).stdout.decode()
        assert "home/<user>/job/rank1.log" in output
        assert "/carol/" not in output


def test_mask_hosts_leaves_no_domain_suffix_unknown_name_or_ipv6(tmp_path):
    folder = tmp_path / "gpu-node-a17"
    folder.mkdir()
    (folder / "rank3.log").write_text(
        "gpu-node-a17:2231:2231 [3] NCCL INFO Bootstrap : Using eth0:10.1.0.7<0>\n"
        "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered "
        "(peer gpu-node-a17.cluster.example.com, then gpu-node-b09:29500 and login-3.hpc.example.org, "
        "via fd12:3456:789a::17 and [fe80::1ff:fe23:4567:890a])\n")
    for output_format in ("json", "terminal", "markdown"):
        masked = run_cli("diagnose", str(tmp_path), "--format", output_format, "--mask-hosts").stdout.decode()
        scrubbed = masked.replace(str(tmp_path), "")
        for leaked in ("gpu-node-a17", "cluster.example.com", "gpu-node-b09", "login-3", "hpc.example.org",
                       "fd12:3456:789a::17", "fe80::1ff:fe23:4567:890a", "10.1.0.7"):
            assert leaked not in scrubbed, (leaked, output_format)
        assert "illegal memory access" in scrubbed and "host-" in scrubbed


def test_json_output_stays_valid_json_with_every_form_masked(tmp_path):
    lines = "".join(f"[rank1]: RuntimeError: CUDA error: device-side assert triggered ({planted})\n" for _, planted, _ in PLANTED)
    (tmp_path / "rank1.log").write_text(lines)
    report = json.loads(run_cli("diagnose", str(tmp_path / "rank1.log"), "--format", "json").stdout)
    assert report["primary"]["failure_id"] == "cuda-device-side-assert"
