"""A person's path through what kfctl installed, in a real browser (issue 48 item 5): headless Chromium from Debian's
packages (/usr/bin/chromium, driven by Selenium through Debian's /usr/bin/chromedriver; `make setup` installs them
with e2e/setup-browser) opens `kfctl dashboard`'s URL, is sent to the login, is refused a wrong password, logs in
with the one kfctl generated, sees the central dashboard with the user's namespace, opens Notebooks, fills in the
Jupyter web app's form and launches a notebook, sees it listed and then ready, and deletes it from the list. A
second user (a Dex user an admin added) logs in after the first logged out: no namespace until a Profile kfctl did
not make names them owner, then that namespace only. With the dashboard's registration flow turned on (upstream turns
it off), a third user without a Profile is shown the registration page, and its Finish makes their Profile (through
the real KFAM) and the profile controller their namespace.

Installed by kfctl: the lines of upstream v1.11.0's example the login path needs (e2e/login_support.LOGIN_PATH)
and the Jupyter web app and notebook controller. Real: oauth2-proxy (v7.15.6 standing in for v7.13.0), the central
dashboard, the Jupyter web app, KFAM and the profile and notebook controllers (kubeflow/kubeflow v1.10.0, built by
`make setup`). STAND-INS: Istio's ingress gateway and Dex (e2e/test_login_path.py shows them saying so).

Not installed: the PodDefault webhook (its overlay needs cert-manager), so the form's PodDefault list answers the
web app's 404 (a message at the bottom of the form's screenshot) and the form goes on without one.

The browser dials 127.0.0.1 only: every host name resolves to nothing (--host-resolver-rules) and any other
address goes to a proxy nobody listens on; `kfctl dashboard` forwards its 127.0.0.1 port to the gateway's pod.
The oracles: the API server (the Notebook the form made, the StatefulSet the real controller made of it, both
gone after the delete), the generated login's Secrets, and what the pages show, a screenshot per step kept under
.work/screenshots/test_browser/ (printed).
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from apply_support import REPO, kubectl
from harness import Cluster
from kfctl_testbed import upstream_mirror
from login_support import LOGIN_PATH, USER, Installed, install_part, kfctl_dashboard, login_password
from reliability_support import kubectl_apply

pytestmark = pytest.mark.e2e

NAME = "browser"
PATHS = (
    *LOGIN_PATH,
    "applications/jupyter/jupyter-web-app/upstream/overlays/istio",
    "applications/jupyter/notebook-controller/upstream/overlays/kubeflow",
)
NAMESPACE = "kubeflow-user-example-com"  # the example Profile's (common/user-namespace)
NOTEBOOK = "browser-notebook"
SECOND_USER = "second@example.com"
SECOND_NAMESPACE = "second-user"
THIRD_USER = "third@example.com"
THIRD_NAMESPACE = "third"  # the registration page's default: the email's part before "@" (main-page's _extractLdap)
# The namespaces the dashboard's selector offers (its namespaces property, the env-info's namespaces)
OFFERED = "return (arguments[0].namespaces || []).map(n => n.namespace);"
ALL = "All namespaces"  # the selector's own first entry (namespace-selector.js ALL_NAMESPACES), no namespace
DELETE_BUTTON = '[data-cy-resource-table-action-icon="delete"] button'
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOTS = REPO / ".work" / "screenshots" / "test_browser"
WAIT = 90.0  # seconds for a page to show what it should (the web apps answer in a few, under load in 20)
ARGS = (
    "--headless=new",
    "--no-sandbox",  # as root
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
    "--window-size=1400,1000",
    # Nothing but 127.0.0.1: names resolve to nothing, other addresses go to a port nobody listens on.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--proxy-server=http://127.0.0.1:9",
)
# The element a path of CSS selectors finds: the first match of the first anywhere in the page or a shadow root
# under it, then of the next in that element's shadow root or under it (the dashboard is Polymer's web components).
DEEP_QUERY = """
const deep = (root, sel) => {
  const found = root.querySelector(sel);
  if (found) return found;
  for (const el of root.querySelectorAll('*')) {
    if (el.shadowRoot) { const f = deep(el.shadowRoot, sel); if (f) return f; }
  }
  return null;
};
let found = null;
for (const sel of arguments[0]) {
  found = deep(found ? found.shadowRoot || found : document, sel);
  if (!found) return null;
}
return found;
"""

T = TypeVar("T")


@pytest.fixture(scope="module")
def platform(
    module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, release_mirror: upstream_mirror.Mirror
) -> Installed:
    return install_part(module_cluster, tmp_path_factory.mktemp("browser") / NAME, release_mirror, PATHS)


@pytest.fixture(scope="module")
def url(platform: Installed) -> Iterator[str]:
    with kfctl_dashboard(platform) as dashboard:
        yield dashboard.url


@dataclass
class Browser:
    driver: Any  # selenium.webdriver.Chrome
    shots: list[Path] = field(default_factory=list)
    frame: Any = None  # the dashboard's iframe the driver is in, if any

    def shot(self, step: str) -> Path:
        """A screenshot of the whole window (the dashboard around its app's frame) as ``NN-step.png``."""
        path = SCREENSHOTS / f"{len(self.shots) + 1:02d}-{step}.png"
        self.driver.switch_to.default_content()
        try:
            assert self.driver.save_screenshot(str(path)), path
        finally:
            if self.frame is not None:
                self.driver.switch_to.frame(self.frame)
        self.shots.append(path)
        print(f"  screenshot: {path}")
        return path

    def click_at(self, element: Any) -> None:
        """A mouse click at the middle of ``element`` on the screen, as a person's."""
        from selenium.webdriver.common.actions.action_builder import ActionBuilder

        box = self.driver.execute_script("return arguments[0].getBoundingClientRect().toJSON();", element)
        actions = ActionBuilder(self.driver)
        actions.pointer_action.move_to_location(int(box["x"] + box["width"] / 2), int(box["y"] + box["height"] / 2))
        actions.pointer_action.click()
        actions.perform()

    def enter(self, frame: Any) -> None:
        self.driver.switch_to.frame(frame)
        self.frame = frame

    def until(self, what: str, check: Callable[[], T | None], timeout: float = WAIT) -> T:
        """check()'s first truthy result; after ``timeout`` s the test fails naming ``what``, the page's URL and
        a screenshot of it."""
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                result = check()
            except Exception as e:  # a page still loading: stale or missing elements
                result, last = None, e
            if result:
                return result
            time.sleep(0.25)
        failed = self.shot("failed")
        failed.with_suffix(".html").write_text(self.driver.page_source)  # the frame's, when in one
        pytest.fail(f"{what}: not within {timeout:.0f} s at {self.driver.current_url} ({last!r}); see {failed}")

    def deep(self, *path: str) -> Any:
        return self.driver.execute_script(DEEP_QUERY, list(path))

    def by_text(self, tag: str, text: str, within: str = "") -> Any:
        """The first visible ``tag`` (under the CSS selector ``within``) whose text is ``text`` or ends with it
        (after an icon's ligature, as Material's "add New Notebook"), case and spaces aside."""
        from selenium.webdriver.common.by import By

        for el in self.driver.find_elements(By.CSS_SELECTOR, f"{within} {tag}".strip()):
            shown = " ".join(el.text.split()).lower()
            if el.is_displayed() and (shown == text.lower() or shown.endswith(" " + text.lower())):
                return el
        return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    assert not missing, f"no {', '.join(missing)}: run `make setup` (e2e/setup-browser installs Debian's chromium)"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ARGS:
        options.add_argument(arg)
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)
    print(f"\nscreenshots: {SCREENSHOTS}")
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(WAIT)
    try:
        yield Browser(driver)
    finally:
        driver.quit()


def api_get(platform: Installed, kind: str, name: str) -> dict[str, Any] | None:
    text = kubectl(platform.kubeconfig, "get", kind, name, "-n", NAMESPACE, "-o", "json", check=False)
    return json.loads(text) if text else None


def test_the_dashboard_url_leads_to_dex_whose_form_refuses_a_wrong_password(url: str, browser: Browser) -> None:
    from selenium.webdriver.common.by import By

    driver = browser.driver

    def sign_in() -> Any:  # oauth2-proxy's page (upstream's skip_provider_button = false); its button starts the login
        driver.get(url)  # again while the gateway answers anything else (a route not yet read from the API server)
        return browser.by_text("button", "Sign in with Dex")

    button = browser.until("oauth2-proxy's sign-in page", sign_in)
    browser.shot("sign-in")
    button.click()
    browser.until("Dex's login form", lambda: driver.find_element(By.ID, "password"))
    assert driver.current_url.startswith(url.rstrip("/") + "/dex/auth/local/login"), driver.current_url
    browser.shot("dex-login")
    driver.find_element(By.ID, "login").send_keys(USER)
    driver.find_element(By.ID, "password").send_keys("12341234")  # upstream's shared password: not this install's
    driver.find_element(By.ID, "submit-login").click()
    error = browser.until("Dex's error", lambda: driver.find_element(By.ID, "login-error"))
    assert error.text == "Invalid Email Address and password."
    browser.shot("wrong-password")


def test_the_generated_password_logs_in_and_the_dashboard_shows_the_users_namespace(
    platform: Installed, url: str, browser: Browser
) -> None:
    driver = browser.driver
    password = login_password(platform)  # Secret auth/kfctl-login, as `kfctl dashboard` points at it
    submit_login(browser, USER, password)
    browser.until("the central dashboard", lambda: driver.title == "Kubeflow Central Dashboard")
    assert driver.current_url.startswith(url), driver.current_url
    # From KFAM through the dashboard's /api/workgroup/env-info: the namespace of the Profile the user owns
    browser.until("the namespace selector showing the user's namespace", lambda: selected(browser) == NAMESPACE)
    assert browser.deep('iframe-link[href*="/jupyter/"]') is not None
    browser.shot("dashboard")


def test_a_notebook_launched_from_the_form_is_made_by_the_controller_and_listed(
    platform: Installed, browser: Browser
) -> None:
    from selenium.webdriver.common.by import By

    driver = browser.driver
    browser.until("the Notebooks menu item", lambda: browser.deep('iframe-link[href*="/jupyter/"] paper-item')).click()
    frame = browser.until("the Notebooks app's frame", lambda: browser.deep("iframe-container", "iframe"))
    assert "/_/jupyter/" in driver.current_url, driver.current_url
    browser.enter(frame)
    new = browser.until("the web app's New Notebook", lambda: enabled(browser.by_text("button", "New Notebook")))
    browser.shot("notebooks")
    new.click()
    name = browser.until("the form's Name", lambda: driver.find_element(By.CSS_SELECTOR, "input[placeholder=Name]"))
    name.send_keys(NOTEBOOK)
    launch = browser.until("LAUNCH enabled", lambda: enabled(browser.by_text("button", "Launch")))
    browser.shot("new-notebook-form")
    launch.click()
    notebook = browser.until("the Notebook on the API server", lambda: api_get(platform, "notebook", NOTEBOOK))
    # The web app's notebook_template.yaml with the form's values (the name in its container's too)
    assert notebook["spec"]["template"]["spec"]["containers"][0]["name"] == NOTEBOOK
    statefulset = browser.until("its StatefulSet, made by the controller", lambda: api_get(platform, "sts", NOTEBOOK))
    assert [o["kind"] for o in statefulset["metadata"]["ownerReferences"]] == ["Notebook"]
    browser.until("the notebook's row in the list", lambda: row_of(browser, NOTEBOOK))
    browser.shot("notebook-listed")
    # Ready: the controller's StatefulSet's pod (kwok plays it) ready, the Notebook's status says so, and the list
    # shows its status icon (check_circle) in place of the spinner
    browser.until("the Notebook's status ready", lambda: ready_replicas(platform) == 1, timeout=180)
    browser.until(
        "the row's ready icon",
        lambda: row_of(browser, NOTEBOOK).find_element(By.CSS_SELECTOR, "mat-icon.check_circle"),
    )
    browser.shot("notebook-ready")


def test_deleting_the_notebook_from_the_list_removes_it_from_the_api_server(
    platform: Installed, browser: Browser
) -> None:
    from selenium.webdriver.common.by import By

    delete = browser.until(  # the row's delete icon (its data-cy hook, upstream's Cypress tests' own)
        "the notebook's delete button",
        lambda: enabled(row_of(browser, NOTEBOOK).find_element(By.CSS_SELECTOR, DELETE_BUTTON)),
    )
    delete.click()
    dialog = "mat-dialog-container"
    confirm = browser.until("the dialog's DELETE", lambda: enabled(browser.by_text("button", "Delete", within=dialog)))
    browser.shot("delete-confirm")
    confirm.click()
    browser.until("the Notebook gone from the API server", lambda: api_get(platform, "notebook", NOTEBOOK) is None)
    # The web app deletes in the foreground: the StatefulSet went first (kube-controller-manager's garbage collector)
    assert api_get(platform, "sts", NOTEBOOK) is None
    browser.until("the row gone", lambda: row_of(browser, NOTEBOOK) is None)
    browser.shot("notebook-deleted")


@pytest.fixture(scope="module")
def third_password() -> str:
    return secrets.token_urlsafe(12)


def test_a_second_user_has_no_namespace_until_a_profile_then_sees_only_their_own(
    platform: Installed, browser: Browser, third_password: str
) -> None:
    """An admin adds a Dex user (a static password in the dex ConfigMap, Dex restarted, as upstream's README says);
    they log in after the first user logged out: the dashboard answers them without a namespace (no Profile: upstream
    turns the registration flow off, CD_REGISTRATION_FLOW=false), and once a Profile kfctl did not make names them
    owner, the real profile controller makes its namespace and the selector offers that one only."""
    driver = browser.driver
    password = secrets.token_urlsafe(12)
    # Both users at once (one Dex restart): the third logs in in the next test
    add_dex_users(platform, {SECOND_USER: password, THIRD_USER: third_password})
    log_out_and_in(browser, SECOND_USER, password)

    # The restarted Dex stand-in signs with a key it made at start (real Dex keeps its keys in its storage); until
    # the gateway stand-in's JWKS (kept 60 s, as istiod refreshes) has it, the gateway answers 401 "Jwks doesn't have
    # key to match kid or alg from Jwt"
    browser.until("the dashboard for the second user", lambda: reloaded_dashboard(browser), timeout=150)
    # The dashboard answers them (its env-info, fetched with the browser's session), with no namespace
    info = env_info(browser)
    assert (info["user"], info["namespaces"]) == (SECOND_USER, []), info
    browser.shot("second-user-without-profile")
    profile = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "Profile",
        "metadata": {"name": SECOND_NAMESPACE},
        "spec": {"owner": {"kind": "User", "name": SECOND_USER}},
    }
    kubectl_apply(platform.kubeconfig, [profile])
    browser.until(
        "the Profile's namespace, made by the profile controller",
        lambda: kubectl(platform.kubeconfig, "get", "namespace", SECOND_NAMESPACE, "-o", "name", check=False),
    )

    owned = [{"namespace": SECOND_NAMESPACE, "role": "owner", "user": SECOND_USER}]
    browser.until("KFAM naming the second user owner of it", lambda: env_info(browser)["namespaces"] == owned)

    def offered() -> list[str]:  # after a reload, once the dashboard has the user's env-info from KFAM
        driver.refresh()
        time.sleep(3)
        return [n for n in driver.execute_script(OFFERED, browser.deep("namespace-selector")) or [] if n != ALL]

    assert browser.until("the selector offering a namespace", offered) == [SECOND_NAMESPACE]
    browser.shot("second-user-own-namespace")


def test_with_the_registration_flow_on_a_user_without_a_profile_makes_one_from_the_registration_page(
    platform: Installed, browser: Browser, third_password: str
) -> None:
    """An admin turns the dashboard's registration flow on (its REGISTRATION_FLOW, upstream's CD_REGISTRATION_FLOW
    parameter, false in upstream's params.env); a user without a Profile then gets the registration page, not an
    error; its Finish sends the namespace name to the dashboard, whose KFAM (real) creates the Profile they own, and
    the real profile controller its namespace: the dashboard then shows it selected."""
    kubeconfig = platform.kubeconfig
    kubectl(kubeconfig, "set", "env", "deployment/centraldashboard", "-n", "kubeflow", "REGISTRATION_FLOW=true")
    kubectl(kubeconfig, "rollout", "status", "deployment/centraldashboard", "-n", "kubeflow", "--timeout", "120s")
    log_out_and_in(browser, THIRD_USER, third_password)
    # Upstream's dashboard has no readiness probe: its pod is Ready before node listens, and until then the
    # gateway answers 503 "no healthy upstream", as Istio's would
    browser.until("the dashboard", lambda: reloaded_dashboard(browser))

    def registration_button(text: str) -> Any:
        return browser.driver.execute_script(REGISTRATION_BUTTON, text)

    start = browser.until("the registration page's Start Setup", lambda: registration_button("Start Setup"))
    assert env_info(browser)["namespaces"] == []  # no Profile yet
    browser.shot("registration-welcome")
    browser.click_at(start)
    name = browser.until("the namespace the page offers", lambda: browser.driver.execute_script(REGISTRATION_NAME))
    assert name == THIRD_NAMESPACE
    browser.shot("registration-namespace")
    browser.click_at(browser.until("the registration page's Finish", lambda: registration_button("Finish")))

    profile = browser.until(
        "the Profile the registration made",
        lambda: kubectl(kubeconfig, "get", "profile", THIRD_NAMESPACE, "-o", "json", check=False),
    )
    assert json.loads(profile)["spec"]["owner"] == {"kind": "User", "name": THIRD_USER}
    browser.until(
        "the Profile's namespace, made by the profile controller",
        lambda: kubectl(kubeconfig, "get", "namespace", THIRD_NAMESPACE, "-o", "name", check=False),
    )
    owned = [{"namespace": THIRD_NAMESPACE, "role": "owner", "user": THIRD_USER}]
    browser.until("KFAM naming the third user owner of it", lambda: env_info(browser)["namespaces"] == owned)
    browser.until("the registration page gone", lambda: not registration_button("Finish"))
    browser.until("the namespace selector showing it", lambda: selected(browser) == THIRD_NAMESPACE, timeout=30)
    browser.shot("registered-own-namespace")


# The registration page's button whose text is arguments[0], and the namespace name its input holds
# (registration-page.pug: paper-buttons and md2-input#Namespace in the element's shadow root, under main-page's)
REGISTRATION = f"""
const text = arguments[0];
const element = (function () {{ {DEEP_QUERY} }}).apply(null, [['registration-page']]);
const page = element && element.shadowRoot;
"""
# The button only once a click at its middle lands on it: the two pages cross-fade (neon-animated-pages) and
# until the fade ends the page leaving lies over it and takes a click (Finish clicked mid-fade sent nothing)
REGISTRATION_BUTTON = (
    REGISTRATION
    + "const onTop = (b) => { const r = b.getBoundingClientRect();"
    + " return b.contains(page.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)); };"
    + "return page ? [...page.querySelectorAll('paper-button')]"
    + ".find(b => b.textContent.trim() === text && b.offsetParent !== null && !b.disabled && onTop(b)) || null"
    + " : null;"
)
REGISTRATION_NAME = (
    REGISTRATION
    + "const input = page && page.querySelector('#Namespace');"
    + "return input && input.offsetParent !== null ? input.value : null;"
)


def reloaded_dashboard(browser: Browser) -> bool:
    """Whether the page is the central dashboard; if not, reloaded (after 2 s) as a person would."""
    if browser.driver.title == "Kubeflow Central Dashboard":
        return True
    time.sleep(2)
    browser.driver.refresh()
    return False


def log_out_and_in(browser: Browser, email: str, password: str) -> None:
    """The dashboard's logout button, oauth2-proxy's sign-in page, then Dex's form as ``email``."""
    browser.frame = None
    browser.driver.switch_to.default_content()
    logout = browser.until("the dashboard's logout button", lambda: browser.deep("logout-button", "#logout-button"))
    browser.click_at(logout)  # two shadow roots deep: chromedriver's element click fails there ('defaultView')
    browser.until("oauth2-proxy's sign-in page again", lambda: browser.by_text("button", "Sign in with Dex")).click()
    submit_login(browser, email, password)


def env_info(browser: Browser) -> Any:
    """The dashboard's /api/workgroup/env-info as the browser's session gets it."""
    fetch = (
        "const done = arguments[0];"
        "fetch('/api/workgroup/env-info').then(r => r.json()).then(done, e => done(String(e)));"
    )
    return browser.driver.execute_async_script(fetch)


def submit_login(browser: Browser, email: str, password: str) -> None:
    """Dex's form (the page the driver is on), filled in and sent."""
    from selenium.webdriver.common.by import By

    login = browser.until("Dex's login form", lambda: browser.driver.find_element(By.ID, "login"))
    login.clear()
    login.send_keys(email)
    browser.driver.find_element(By.ID, "password").send_keys(password)
    browser.driver.find_element(By.ID, "submit-login").click()


def selected(browser: Browser) -> str:
    """What the dashboard's namespace selector shows."""
    shown = browser.deep("namespace-selector", "#SelectedNamespace")
    return " ".join(str(shown.get_attribute("textContent")).split()) if shown else ""


def add_dex_users(platform: Installed, passwords: dict[str, str]) -> None:
    """Static passwords in Dex's config (ConfigMap auth/dex), then Dex restarted to read them."""
    import bcrypt

    config_map = json.loads(kubectl(platform.kubeconfig, "get", "configmap", "dex", "-n", "auth", "-o", "json"))
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    for number, (email, password) in enumerate(passwords.items()):
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=10)).decode()
        user = {"email": email, "hash": hashed, "username": email.split("@")[0], "userID": f"2048102{number}"}
        config["staticPasswords"].append(user)
    patch = json.dumps({"data": {"config.yaml": yaml.safe_dump(config, sort_keys=False)}})
    kubectl(platform.kubeconfig, "patch", "configmap", "dex", "-n", "auth", "--type", "merge", "-p", patch)
    kubectl(platform.kubeconfig, "rollout", "restart", "deployment/dex", "-n", "auth")
    kubectl(platform.kubeconfig, "rollout", "status", "deployment/dex", "-n", "auth", "--timeout", "120s")


def ready_replicas(platform: Installed) -> int:
    notebook = api_get(platform, "notebook", NOTEBOOK) or {}
    return int((notebook.get("status") or {}).get("readyReplicas") or 0)


def enabled(element: Any) -> Any:
    """``element`` (or the button it is in) if it is enabled, else None."""
    from selenium.webdriver.common.by import By

    if element is None:
        return None
    button = element if element.tag_name == "button" else element.find_element(By.XPATH, "./ancestor::button")
    return button if button.is_enabled() and button.get_attribute("disabled") is None else None


def row_of(browser: Browser, name: str) -> Any:
    """The list's table row whose name cell is ``name``."""
    from selenium.webdriver.common.by import By

    for row in browser.driver.find_elements(By.CSS_SELECTOR, "tr"):
        if name in row.text.split():
            return row
    return None
