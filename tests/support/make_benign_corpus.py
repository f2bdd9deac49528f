"""Generate tests/fixtures/benign_commands.txt: realistic text that holds no secret.

The corpus measures the redactor's false positives: shell history, git, docker, kubectl,
package managers, code, logs, URLs without credentials, config lines with placeholders,
and the random-looking but public values developers paste all day (git SHAs, sha256 sums,
UUIDs, digests, integrity hashes, base64 images, hashed asset names). It is built from
combinatorial templates with a fixed seed, so it is reproducible: a test regenerates it
and compares with the committed file.

Run ``python tests/support/make_benign_corpus.py`` to rewrite the file after editing.
"""

from __future__ import annotations

import base64
import random
import uuid
from collections.abc import Callable
from pathlib import Path

SEED = 20240611
TARGET_LINES = 6000
OUTPUT = Path(__file__).resolve().parent.parent / "fixtures" / "benign_commands.txt"

ORGS = ["acme", "octo-org", "platform-team", "kubernetes", "pallets", "encode", "tiangolo"]
REPOS = ["webapp", "api-gateway", "billing", "infra", "mnemonic", "flask", "httpx", "dotfiles"]
BRANCHES = [
    "main",
    "develop",
    "feature/login-form",
    "fix/null-pointer-on-empty-cart",
    "release/2.4",
    "chore/bump-deps",
    "refactor/split-user-service",
    "hotfix/timeout-retry",
]
MESSAGES = [
    "Fix off-by-one in pagination",
    "Add retry with backoff to the HTTP client",
    "Refactor token refresh logic into its own module",
    "Bump pydantic to 2.7",
    "Remove dead code in the key rotation script",
    "Document the password reset flow",
    "WIP: secret scanning pre-commit hook",
    "Handle missing API key gracefully",
    "Update README with setup steps",
    "Revert broken migration",
    "Use pathlib everywhere",
    "Speed up the test suite by 40%",
]
PATHS = [
    "src/app/main.py",
    "src/app/auth/tokens.py",
    "tests/test_api.py",
    "README.md",
    "docs/setup.md",
    "web/src/components/LoginForm.tsx",
    "pkg/server/handler.go",
    "Cargo.toml",
    "config/settings.yaml",
    ".github/workflows/ci.yml",
    "migrations/0003_add_index.sql",
    "scripts/rotate_keys.sh",
]
IMAGES = ["python", "node", "postgres", "redis", "nginx", "ubuntu", "alpine", "golang"]
TAGS = ["3.12-slim", "20-alpine", "16", "7", "1.25", "24.04", "3.19", "latest"]
NAMESPACES = ["default", "kube-system", "monitoring", "staging", "prod", "ingress-nginx"]
SERVICES = ["api", "worker", "web", "scheduler", "auth", "payments", "search"]
PKGS = ["requests", "numpy", "pydantic", "fastapi", "httpx", "pytest", "ruff", "typer", "rich"]
NPM_PKGS = ["react", "typescript", "vite", "eslint", "zod", "@types/node", "prettier", "axios"]
DOMAINS = ["example.com", "api.acme.dev", "docs.python.org", "github.com", "registry.npmjs.org"]
HOSTS = ["db.internal", "10.0.3.12", "bastion.acme.io", "build-01", "localhost", "staging-web-2"]
USERS = ["alice", "bob", "deploy", "ubuntu", "ec2-user", "git", "root"]
WORDS = [
    "timeout",
    "token",
    "user_id",
    "session",
    "cache",
    "retry",
    "password",
    "secret",
    "key",
    "migration",
    "TODO",
    "deprecated",
]
FUNCS = [
    "get_token",
    "refresh_session",
    "load_config",
    "rotate_keys",
    "hash_password",
    "verify_signature",
    "parse_args",
    "build_index",
]
REGIONS = ["eu-west-1", "us-east-1", "ap-southeast-2", "europe-west4"]


class Gen:
    """Random building blocks; every value is public or a placeholder by construction."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def pick(self, items: list[str]) -> str:
        return self.r.choice(items)

    def hex(self, n: int) -> str:
        return "".join(self.r.choice("0123456789abcdef") for _ in range(n))

    def sha(self) -> str:
        return self.hex(40)

    def sha7(self) -> str:
        return self.hex(7)

    def sha256(self) -> str:
        return self.hex(64)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def b64(self, nbytes: int) -> str:
        return base64.b64encode(bytes(self.r.getrandbits(8) for _ in range(nbytes))).decode()

    def num(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def port(self) -> int:
        return self.r.choice([80, 443, 3000, 5432, 6379, 8000, 8080, 8443, 9090, 9999])

    def ver(self) -> str:
        return f"{self.num(0, 4)}.{self.num(0, 30)}.{self.num(0, 12)}"

    def ident(self) -> str:
        parts = self.r.sample(
            [
                "user",
                "session",
                "request",
                "handler",
                "cache",
                "index",
                "builder",
                "config",
                "event",
                "stream",
                "token",
                "parser",
                "manager",
                "factory",
                "retry",
                "policy",
            ],
            self.num(2, 5),
        )
        return "_".join(parts)

    def camel(self) -> str:
        return "".join(p.capitalize() for p in self.ident().split("_"))

    def timestamp(self) -> str:
        return (
            f"2024-{self.num(1, 12):02d}-{self.num(1, 28):02d}T{self.num(0, 23):02d}:"
            f"{self.num(0, 59):02d}:{self.num(0, 59):02d}.{self.num(0, 999):03d}Z"
        )


def git_lines(g: Gen) -> str:
    repo, org, branch = g.pick(REPOS), g.pick(ORGS), g.pick(BRANCHES)
    options = [
        "git status",
        f"git add {g.pick(PATHS)}",
        f'git commit -m "{g.pick(MESSAGES)}"',
        f"git checkout -b {branch}",
        f"git switch {branch}",
        f"git log --oneline -n {g.num(3, 50)}",
        f"git show {g.sha()}",
        f"git diff {g.sha7()}..{g.sha7()} -- {g.pick(PATHS)}",
        f"git rebase -i HEAD~{g.num(2, 12)}",
        f"git cherry-pick {g.sha()}",
        f"git reset --hard {g.sha7()}",
        f"git revert --no-edit {g.sha()}",
        f"git push -u origin {branch}",
        "git pull --rebase origin main",
        f"git clone https://github.com/{org}/{repo}.git",
        f"git clone git@github.com:{org}/{repo}.git",
        f"git remote add upstream https://gitlab.com/{org}/{repo}.git",
        f'git tag -a v{g.ver()} -m "Release {g.ver()}"',
        f'git stash push -m "{g.pick(MESSAGES)}"',
        f"git bisect bad {g.sha()}",
        f"git blame -L {g.num(1, 200)},+{g.num(5, 40)} {g.pick(PATHS)}",
        f'git config --global user.email "{g.pick(USERS)}@{g.pick(DOMAINS)}"',
        "git config --global credential.helper osxkeychain",
        f'git log --author="{g.pick(USERS)}" --since="2 weeks ago" --stat',
        f"{g.sha()}\trefs/heads/{branch}",
        f"commit {g.sha()}",
        f"Merge: {g.sha7()} {g.sha7()}",
        f"Change-Id: I{g.sha()}",
        f"{g.sha7()} {g.pick(MESSAGES)}",
        f"git fetch origin pull/{g.num(1, 9999)}/head:pr-{g.num(1, 9999)}",
        f"git worktree add ../{repo}-{branch.split('/')[-1]} {branch}",
    ]
    return g.pick(options)


def container_lines(g: Gen) -> str:
    image, tag, port = g.pick(IMAGES), g.pick(TAGS), g.port()
    svc, ns = g.pick(SERVICES), g.pick(NAMESPACES)
    pod = f"{svc}-{g.hex(10)}-{g.hex(5)}"
    options = [
        f"docker run --rm -it -p {port}:{port} -v $(pwd):/app {image}:{tag} bash",
        f"docker build -t {g.pick(ORGS)}/{svc}:{g.ver()} .",
        "docker ps -a",
        f"docker logs -f --tail 200 {svc}",
        f"docker exec -it {svc} sh",
        f"docker compose up -d {svc}",
        f"docker pull {image}@sha256:{g.sha256()}",
        "docker login ghcr.io",
        f"docker login -u {g.pick(USERS)} --password-stdin registry.gitlab.com",
        f"docker build --secret id=npmrc,src=$HOME/.npmrc -t {svc}:dev .",
        "docker run -e POSTGRES_PASSWORD=$POSTGRES_PASSWORD -p 5432:5432 postgres:16",
        f"docker image inspect --format '{{{{.Id}}}}' {image}:{tag}",
        f"sha256:{g.sha256()}",
        f"docker run --user 1000:1000 -p 127.0.0.1:{port}:{port} {image}:{tag}",
        f"kubectl get pods -n {ns}",
        f"kubectl describe pod {pod} -n {ns}",
        f"kubectl logs {pod} -n {ns} --since=1h",
        f"kubectl apply -f k8s/{svc}.yaml",
        f"kubectl rollout restart deployment/{svc} -n {ns}",
        f"kubectl port-forward svc/{svc} {port}:{port} -n {ns}",
        f"kubectl create secret generic {svc}-env --from-env-file=.env -n {ns}",
        f"kubectl get secret {svc}-db -o jsonpath='{{.data.password}}' | base64 -d",
        f"kubectl config use-context {g.pick(['kind-dev', 'gke_acme_eu', 'minikube'])}",
        f"helm upgrade --install {svc} ./charts/{svc} -n {ns} -f values-{ns}.yaml",
        f"{pod}   1/1     Running   {g.num(0, 5)}          {g.num(1, 59)}m",
    ]
    return g.pick(options)


def python_js_lines(g: Gen) -> str:
    pkg, npm = g.pick(PKGS), g.pick(NPM_PKGS)
    options = [
        f"python -m pytest tests/test_{g.pick(SERVICES)}.py -k {g.pick(FUNCS)} -x -q",
        f"pip install {pkg}=={g.ver()}",
        "pip install -r requirements.txt",
        f"pip install --user {pkg}",
        "python manage.py migrate",
        f"uv pip install {pkg}",
        f"poetry add {pkg}@^{g.ver()}",
        f'python -c "import {pkg}; print({pkg}.__version__)"',
        f"mypy src/{g.pick(SERVICES)} --strict",
        f"ruff check {g.pick(PATHS)} --fix",
        f"npm install {npm}@{g.ver()}",
        "npm run build",
        f"npx {g.pick(['tsc', 'eslint', 'prettier', 'vitest'])} --version",
        f"yarn add -D {npm}",
        "pnpm test -- --watch",
        "npm config set registry https://registry.npmjs.org/",
        "npm login --registry=https://npm.pkg.github.com",
        f'  "integrity": "sha512-{g.b64(64)}",',
        f'  "resolved": "https://registry.npmjs.org/{npm}/-/{npm.split("/")[-1]}-{g.ver()}.tgz",',
        f'checksum = "{g.sha256()}"',
        f"{pkg}=={g.ver()} \\",
        f"    --hash=sha256:{g.sha256()}",
        "source .venv/bin/activate",
        "make test",
        f"cargo build --release --bin {g.pick(SERVICES)}",
        f"go test ./pkg/{g.pick(SERVICES)}/... -run Test{g.camel()} -v",
    ]
    return g.pick(options)


def shell_lines(g: Gen) -> str:
    host, user, port = g.pick(HOSTS), g.pick(USERS), g.port()
    options = [
        f"cd ~/src/{g.pick(REPOS)}",
        f"ls -la {g.pick(['~/.config', '/etc/nginx', 'src', 'build', '~/.ssh'])}",
        f'grep -rn "{g.pick(WORDS)}" src/',
        f'rg "{g.ident()}" -t py',
        f'find . -name "*.{g.pick(["py", "ts", "go", "rs", "md"])}" -mtime -1',
        f"tail -f /var/log/{g.pick(SERVICES)}/{g.pick(['error', 'access', 'app'])}.log",
        f"cat {g.pick(PATHS)}",
        f"vim {g.pick(PATHS)}",
        f"sed -i 's/{g.pick(WORDS)}/{g.pick(WORDS)}/g' {g.pick(PATHS)}",
        "chmod 600 ~/.ssh/id_ed25519",
        f"ssh {user}@{host}",
        f"ssh -i ~/.ssh/id_ed25519 -p 2222 {user}@{host}",
        f"ssh -L {port}:localhost:{port} {user}@{host}",
        f"scp build/app.tar.gz {user}@{host}:/tmp/",
        f"rsync -avz --delete dist/ {user}@{host}:/srv/www/",
        f"tar -czf backup-{g.num(1, 31)}.tar.gz data/",
        "du -sh * | sort -h",
        "df -h",
        f"ps aux | grep {g.pick(SERVICES)}",
        f"kill -9 {g.num(1000, 99999)}",
        f"lsof -i :{port}",
        'export PATH="$HOME/.local/bin:$PATH"',
        "export EDITOR=nvim",
        "export NODE_ENV=production",
        f"export AWS_PROFILE={g.pick(['dev', 'prod', 'sandbox'])}",
        f"export AWS_REGION={g.pick(REGIONS)}",
        f'terraform plan -var="region={g.pick(REGIONS)}" -out=tfplan',
        f"aws s3 ls s3://{g.pick(ORGS)}-{g.pick(['logs', 'assets', 'backups'])}/",
        "aws sts get-caller-identity",
        f"aws ecr get-login-password --region {g.pick(REGIONS)} | docker login --username AWS"
        f" --password-stdin 123456789012.dkr.ecr.{g.pick(REGIONS)}.amazonaws.com",
        f"gcloud config set project {g.pick(ORGS)}-{g.pick(['prod', 'dev'])}",
        f"brew install {g.pick(['jq', 'ripgrep', 'fd', 'gh', 'k9s'])}",
        f"sudo apt-get install -y {g.pick(['build-essential', 'libpq-dev', 'curl', 'git'])}",
        f"systemctl --user status {g.pick(SERVICES)}",
        f"journalctl -u {g.pick(SERVICES)} --since today",
        "mysql -u root -p",
        f"mysql -h {host} -P 3306 -u app -p {g.pick(SERVICES)}_db",
        f"psql -h localhost -U postgres -d {g.pick(SERVICES)}",
        f"pg_dump --dbname=app --username=app --password --file=dump-{g.num(1, 9)}.sql",
        f"redis-cli -h {host} ping",
        "openssl x509 -in cert.pem -noout -text",
        f'ssh-keygen -t ed25519 -C "{user}@{g.pick(DOMAINS)}"',
        "ssh-add ~/.ssh/id_ed25519",
        "gpg --list-secret-keys --keyid-format=long",
        "openssl rand -hex 32",
        f"openssl genrsa -out {g.pick(SERVICES)}.key 4096",
        "echo $SHELL",
        f"history | grep {g.pick(WORDS)}",
        "uuidgen",
        f"sha256sum {g.pick(REPOS)}-{g.ver()}.tar.gz",
        f"{g.sha256()}  {g.pick(REPOS)}-{g.ver()}.tar.gz",
        f"{g.hex(32)}  {g.pick(PATHS)}",
        f"echo '{g.sha256()}  release.zip' | sha256sum -c",
        "gh auth login --with-token < ~/.config/gh/token.txt",
        "gh auth status",
        f"gh pr create --title '{g.pick(MESSAGES)}' --body 'See #{g.num(1, 999)}'",
        f"vault kv get -field=password secret/{g.pick(SERVICES)}/db",
        f"ansible-playbook -i inventory/{g.pick(['prod', 'staging'])} site.yml --ask-vault-pass",
        "read -s -p 'Password: ' PGPASSWORD && export PGPASSWORD",
        f"curl -u {user} https://{g.pick(HOSTS)}/api/",
    ]
    return g.pick(options)


def http_lines(g: Gen) -> str:
    domain, port = g.pick(DOMAINS), g.port()
    res = g.pick(["users", "orders", "items", "invoices", "keys", "tokens", "sessions"])
    options = [
        f"curl -s 'https://{domain}/v1/{res}?page={g.num(1, 20)}&per_page=50' | jq '.items[].id'",
        f"curl -X POST -H 'Content-Type: application/json' -d '{{\"name\": \"{g.ident()}\"}}'"
        f" http://localhost:{port}/api/{res}",
        f'curl -H "Authorization: Bearer $TOKEN" https://{domain}/v1/{res}',
        f'curl -H "Authorization: Bearer ${{GITHUB_TOKEN}}" https://api.github.com/repos/'
        f"{g.pick(ORGS)}/{g.pick(REPOS)}",
        'curl -H "Authorization: token <your-token>" https://api.github.com/user',
        f"curl -I https://{domain}/",
        f"curl -fsSL https://{domain}/install.sh | sh",
        f"wget https://{domain}/releases/{g.pick(REPOS)}-{g.ver()}.tar.gz",
        f"http GET :{port}/health",
        f"https://github.com/{g.pick(ORGS)}/{g.pick(REPOS)}/pull/{g.num(1, 5000)}",
        f"https://github.com/{g.pick(ORGS)}/{g.pick(REPOS)}/commit/{g.sha()}",
        f"https://{domain}/docs/{g.pick(WORDS)}?q={g.pick(WORDS)}#section-{g.num(1, 9)}",
        f"http://localhost:{port}/",
        f"https://{g.pick(USERS)}@{g.pick(HOSTS)}/repo.git",
        f"ssh://git@{g.pick(HOSTS)}:2222/{g.pick(ORGS)}/{g.pick(REPOS)}.git",
        f"postgres://localhost:5432/{g.pick(SERVICES)}",
        "redis://localhost:6379/0",
        f"https://{g.pick(HOSTS)}:{port}/healthz",
        f"http://[::1]:{port}/metrics",
        f"https://{domain}/oauth/authorize?client_id={g.hex(20)}&response_type=code"
        f"&redirect_uri=http://localhost:{port}/callback&state={g.hex(16)}",
        f"https://s3.{g.pick(REGIONS)}.amazonaws.com/{g.pick(ORGS)}-assets/img/{g.hex(12)}.png",
        f"Location: https://{domain}/{res}/{g.uuid()}",
        f"https://www.npmjs.com/package/{g.pick(NPM_PKGS)}",
        f"https://medium.com/@{g.pick(USERS)}/{g.ident().replace('_', '-')}-{g.hex(12)}",
        f'ETag: "{g.hex(40)}"',
        f"curl https://api.stripe.com/v1/refunds -H 'Idempotency-Key: {g.uuid()}' -d charge=ch_1",
        f"docker://registry.local:5000/{g.pick(SERVICES)}@sha256:{g.sha256()}",
        f"git+ssh://git@github.com/{g.pick(ORGS)}/{g.pick(REPOS)}.git#egg={g.pick(PKGS)}",
        f"jdbc:postgresql://{g.pick(HOSTS)}:5432/{g.pick(SERVICES)}?sslmode=require",
    ]
    return g.pick(options)


def log_lines(g: Gen) -> str:
    svc = g.pick(SERVICES)
    options = [
        f"{g.timestamp()} INFO [{svc}] GET /api/v1/{g.pick(['users', 'orders'])}/{g.num(1, 9999)}"
        f" 200 {g.num(1, 900)}ms request_id={g.uuid()}",
        f"{g.timestamp()} ERROR {svc}.db: connection refused (host={g.pick(HOSTS)}, port=5432)",
        f"{g.timestamp()} WARN retrying in {g.num(1, 30)}s (attempt {g.num(1, 5)}/5)",
        f'  File "/app/{g.pick(PATHS)}", line {g.num(1, 900)}, in {g.pick(FUNCS)}',
        f"KeyError: '{g.pick(WORDS)}'",
        f"{g.timestamp()} INFO token refreshed for user_id={g.num(1, 99999)} expires_in=3600",
        f"{g.timestamp()} WARN invalid password attempt for user {g.pick(USERS)}"
        f" from 10.0.{g.num(0, 255)}.{g.num(0, 255)}",
        f'{{"level":"info","ts":"{g.timestamp()}","msg":"cache hit","key":"user:{g.num(1, 9999)}",'
        f'"trace_id":"{g.hex(32)}"}}',
        f"{g.timestamp()} DEBUG span_id={g.hex(16)} trace_id={g.hex(32)}"
        f" duration={g.num(1, 999)}ms",
        f"{g.timestamp()} INFO deployed {svc}@{g.sha7()} to {g.pick(NAMESPACES)}",
        f"AssertionError: assert {g.num(0, 500)} == {g.num(0, 500)}",
        f"FAILED tests/test_{svc}.py::test_{g.ident()} - TimeoutError",
        f"E       ValueError: invalid literal for int() with base 10: '{g.pick(WORDS)}'",
        f"npm WARN deprecated {g.pick(NPM_PKGS)}@{g.ver()}: this version is no longer supported",
        f"{g.timestamp()} INFO session {g.uuid()} started for {g.pick(USERS)}",
        f"{g.timestamp()} INFO password reset email sent to {g.pick(USERS)}@{g.pick(DOMAINS)}",
        f"{g.timestamp()} ERROR auth: token expired (kid={g.hex(8)},"
        f" exp={g.num(1700000000, 1800000000)})",
        f"Successfully installed {g.pick(PKGS)}-{g.ver()} {g.pick(PKGS)}-{g.ver()}",
    ]
    return g.pick(options)


def code_lines(g: Gen) -> str:
    func, ident, camel = g.pick(FUNCS), g.ident(), g.camel()
    options = [
        f"def {func}(self, {ident}: str) -> None:",
        f"    return self._{ident}",
        'token = request.headers.get("Authorization", "")',
        'headers = {"Authorization": f"Bearer {token}"}',
        'api_key = os.environ["OPENAI_API_KEY"]',
        'password = getpass.getpass("Password: ")',
        "const token = await getToken();",
        'if (!apiKey) throw new Error("missing API key");',
        'SECRET_KEY = env("DJANGO_SECRET_KEY")',
        "self.token = token",
        "let key = cache_key(&req);",
        "for key, value in items.items():",
        "assert response.status_code == 200",
        f"from {g.pick(PKGS)} import {camel}",
        f"class {camel}(BaseModel):",
        "    password: SecretStr",
        "    token: str | None = None",
        "    api_key: Optional[str] = Field(default=None, repr=False)",
        "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
        "if token is None or token.expired:",
        f"    {ident} = {g.camel()}({ident}=None, timeout={g.num(1, 60)})",
        f"func ({g.pick(['s', 'h', 'c'])} *{camel}) {camel}(ctx context.Context) error {{",
        f"export function use{camel}(key: string): {camel} {{",
        "const { data, error } = useSWR(key, fetcher);",
        f"@pytest.mark.parametrize('key', ['{g.pick(WORDS)}', '{g.pick(WORDS)}'])",
        f'    {ident}_key = f"{{user.id}}:{{{ident}}}"',
        "client = OpenAI(api_key=settings.openai_api_key)",
        "conn = psycopg.connect(host=host, user=user, password=password, dbname=db)",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "        password: ${{ secrets.REGISTRY_PASSWORD }}",
        "    key: ${{ runner.os }}-pip-${{ hashFiles('**/requirements.txt') }}",
        f"{camel}{g.camel()}Factory",
        f"test_{ident}_when_{g.ident()}_returns_{g.pick(['none', 'error', 'empty_list'])}",
        f'<img src="data:image/png;base64,{g.b64(150)}" alt="logo">',
        f'<script src="/static/js/main.{g.hex(8)}.chunk.js"></script>',
        f'    id = "{g.uuid()}"',
        f'  "{ident}": "{g.uuid()}",',
        f"{ident.upper()}_ID={g.uuid()}",
        f"TRACE_ID={g.hex(32)}",
        f"build_id: {g.sha()}",
        f'  "version": "{g.ver()}",',
        "{items.map((item) => <Row key={item.id} item={item} />)}",
        "const cacheKey = `${userId}:${page}`;",
        f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{g.b64(120)} {g.pick(USERS)}@laptop",
        "-----BEGIN CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----",
        '<input type="password" name="password" autocomplete="current-password">',
        "    if not secrets.compare_digest(token, expected):",
        f"    password: str = Field(..., min_length={g.num(8, 16)})",
        'echo "SGVsbG8sIHdvcmxkIQ==" | base64 -d',
    ]
    return g.pick(options)


def config_placeholder_lines(g: Gen) -> str:
    options = [
        "API_KEY=your-api-key",
        "OPENAI_API_KEY=<your-openai-key>",
        "TOKEN=${TOKEN}",
        "GITHUB_TOKEN=$GITHUB_TOKEN",
        "password: changeme",
        "DB_PASSWORD=",
        "SECRET_KEY=replace-me",
        "AWS_SECRET_ACCESS_KEY=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        'export STRIPE_SECRET_KEY="sk_live_..."',
        '"apiKey": "YOUR_API_KEY"',
        'password: "{{ vault_db_password }}"',
        "export API_TOKEN=$(cat ~/.config/acme/token)",
        "password=********",
        "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/XXXXXXXXX/XXXXXXXXX/XXXXXXXXXXXXXXXXXXXXXXXX",
        "client_secret: <client-secret>",
        "DATABASE_URL=postgres://user:${DB_PASSWORD}@localhost:5432/app",
        "REDIS_URL=redis://localhost:6379/0",
        "SENTRY_DSN=",
        "password: ''",
        'token: ""',
        "api_key: null",
        "secret: ~",
        "PGPASSWORD=$(vault kv get -field=password secret/db)",
        "ANTHROPIC_API_KEY=sk-ant-...",
        "export OPENAI_API_KEY=sk-...",
        "DEBUG=true",
        "LOG_LEVEL=info",
        f"PORT={g.port()}",
        f"WORKERS={g.num(1, 16)}",
        f"CACHE_TTL={g.num(30, 3600)}",
        f"ALLOWED_HOSTS={g.pick(HOSTS)},{g.pick(DOMAINS)}",
        "PASSWORD_MIN_LENGTH=12",
        "TOKEN_EXPIRY=3600",
        "SECRET_ROTATION_DAYS=90",
        "KEY_ID=primary",
        "password_file: /run/secrets/db_password",
        "GOOGLE_APPLICATION_CREDENTIALS=/home/alice/.config/gcloud/sa-key.json",
        "SSH_KEY=~/.ssh/id_ed25519",
        "PWD=/home/alice/src/webapp",
        "OLDPWD=/home/alice",
        "PUBLIC_KEY_PATH=./keys/public.pem",
        "token_type: bearer",
        "auth: true",
        "  primary_key: id",
        "  sort_key: created_at",
        "  secretName: db-credentials",
        "  key: app.kubernetes.io/name",
    ]
    return g.pick(options)


CATEGORIES: list[tuple[Callable[[Gen], str], int]] = [
    (git_lines, 22),
    (container_lines, 14),
    (python_js_lines, 14),
    (shell_lines, 20),
    (http_lines, 8),
    (log_lines, 10),
    (code_lines, 9),
    (config_placeholder_lines, 3),
]


def generate(seed: int = SEED, target: int = TARGET_LINES) -> list[str]:
    """The corpus lines: unique, in generation order, deterministic for a seed."""
    g = Gen(seed)
    funcs = [f for f, _w in CATEGORIES]
    weights = [w for _f, w in CATEGORIES]
    seen: dict[str, None] = {}
    attempts = 0
    while len(seen) < target and attempts < target * 50:
        attempts += 1
        line = g.r.choices(funcs, weights)[0](g)
        if "\n" not in line:
            seen.setdefault(line, None)
    return list(seen)


def main() -> None:
    lines = generate()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} lines to {OUTPUT}")


if __name__ == "__main__":
    main()
