"""Keys of the shapes providers hand out (random, made for these tests) and strings that look a
little like them but are not secrets. Fixed literals, so every run tests the same inputs."""

# unmarked: nothing but their shape says they are keys
GLM = "4159892b42de4d958e4c1ce1e0e59988.3v6qAeh2BlhVtWfM"  # Zhipu: <32 hex>.<16 chars>
LOWER32 = "1bei6gyajq4opgbvnkkjwnvsz0ujwpk2"
AWS_SECRET = "v4nW5lx+6uFVv08/SYjSTFobwjYgjrxb9M/LoDOG"
HEX40 = "101564350c91035d2104403d588a4c6862754eaa"
JWT = ("eyJfUaaLDW6VUQrZqaBP1mjm0XqQ8HoFJ.fCmc6sFtfqCIQpghLfl41qrccyCKv__vA4-xFgp1Grkhbl4LDSFrh-dcV_5r."
       "vecmsFYh954TBHUyiEevKTTinVH_kzsnpDrDU1Se4JU")
# marked by their issuer
DEEPSEEK = "sk-a599e120fd3207cf47dc5f9625145a69"
MOONSHOT = "sk-0SmnWULglbL8iu1nvqMI34zS2G5BFulWwwpU7NMceUMGEc11"
ANTHROPIC = ("sk-ant-api03-tmSi7hrhM-2VGcvdsvPn-BLatfp-YLiKwP3NjO_bL9p-mH6z9LyJ681ibiBHmPV_ga8OoP1U_giYizYpD"
             "EKt4wdTl4wxEAA")
AWS_ID = "AKIAJVZUMYZSU8JWSYRH"
GITHUB = "ghp_ep0FnalgJKjvXwyYIzHd6ssldxeTwlvRQFPB"
GOOGLE = "AIzaAzeKjxuVPQD4xy-TymlGCscHFaveEA_52B4"

KEYS = {
    "glm": GLM, "lower32": LOWER32, "aws-secret": AWS_SECRET, "hex40": HEX40, "jwt": JWT,
    "deepseek": DEEPSEEK, "moonshot": MOONSHOT, "anthropic": ANTHROPIC, "aws-id": AWS_ID,
    "github": GITHUB, "google": GOOGLE,
}
# the ones no prefix list would catch
UNMARKED = {k: v for k, v in KEYS.items() if k in ("glm", "lower32", "aws-secret", "hex40", "jwt")}

NON_SECRETS = [
    "state/runs/20261203T110512Z-ab12cd34.requests.jsonl", "20261203T110512Z-ab12cd34.json",
    "claude-sonnet-4-5-20250929", "gpt-5-codex", "moonshotai/Kimi-K2-Instruct-0905", "glm-4.6",
    "deepseek-ai/DeepSeek-V3.1-Terminus", "Qwen/Qwen3-Coder-480B-A35B-Instruct",
    "accounts/fireworks/models/kimi-k2-instruct", "meta-llama/Llama-3.3-70B-Instruct-Turbo",
    "Qwen3-235B-A22B-Thinking-2507", "ft:gpt-4o-mini-2024-07-18:my-org::9AbCdEf1", "deepseek-r1-distill-qwen-32b",
    "20261203T075645Z-9f3a1b2c", "550e8400-e29b-41d4-a716-446655440000", "fp:1a2b3c4d5e6f",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "sk-…9f3a", "****",
    "/tmp/ccs-glm-a8Xk2_q9.toml", "/home/u/.local/state/ccs/runs/20261202T101500Z-1a2b3c4d.json",
    "/tmp/pytest-of-root/pytest-12/test_glm_key_refused0/home/.config/ccs/profiles/openrouter-backup.toml",
    "http://127.0.0.1:8080/s24z00dc/5hj0/0", "https://open.bigmodel.cn/api/coding/paas/v4",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "ANTHROPIC_DEFAULT_SONNET_MODEL", "openrouter-claude-backup",
    "internationalization-service", "MyCompanyProductionGateway2024Key", "@anthropic-ai/claude-code@2.1.332",
    "sk-learn-experiment-2", "skip-the-preflight-check-now", "2026-12-03T07:56:45.123456Z", "taotoken",
    "A000000001112345678a", "00000000122345678A1A",
]
