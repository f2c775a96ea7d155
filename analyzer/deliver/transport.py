"""One delivery attempt per channel: an HTTP POST (webhooks) or an SMTP submission (e-mail).

An attempt either returns the confirmation (the HTTP status, SMTP's 250) or raises
``AttemptFailed`` saying whether another try can help (a 5xx, 429, a dropped connection, SMTP
4xx) or not (4xx, a refused login, a certificate that does not verify). Messages carry the
target's scheme and host only: a webhook URL's path is its credential.
"""

from __future__ import annotations

import http.client
import smtplib
import ssl
import urllib.error
import urllib.request
from email.message import EmailMessage
from pathlib import Path

from analyzer.deliver.secrets import public_target


class AttemptFailed(Exception):
    """One try failed; ``retry`` says whether another one may succeed."""

    def __init__(self, reason: str, *, retry: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A webhook that redirects is misconfigured; following it would re-send the body blindly."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def tls_context(ca_bundle: Path | None) -> ssl.SSLContext:
    """Verifying TLS context: the system's CAs, or the team's private CA bundle."""
    return ssl.create_default_context(cafile=str(ca_bundle) if ca_bundle else None)


def post_json(url: str, body: bytes, *, key: str, timeout: float, ca_bundle: Path | None) -> int:
    """POST ``body`` as JSON; the 2xx status, or ``AttemptFailed``."""
    shown = public_target(url)
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json; charset=utf-8",
            "Idempotency-Key": key,
            "User-Agent": "analyzer-notify",
        },
    )
    handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
    if url.startswith("https:"):
        handlers.append(urllib.request.HTTPSHandler(context=tls_context(ca_bundle)))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(request, timeout=timeout) as response:
            response.read(65536)  # drain a little, so the server sees a clean close
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        status = exc.code
        exc.close()
        retry = status >= 500 or status in (408, 429)
        raise AttemptFailed(f"{shown} answered HTTP {status}", retry=retry) from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, ssl.SSLCertVerificationError):
            raise AttemptFailed(
                f"{shown}: TLS certificate not trusted ({reason.verify_message}); "
                "pass --notify-ca-bundle for a private CA",
                retry=False,
            ) from None
        raise AttemptFailed(f"cannot reach {shown} ({_why(reason)})", retry=True) from None
    except TimeoutError:
        raise AttemptFailed(f"{shown} did not answer within {timeout:g}s", retry=True) from None
    except (ConnectionError, OSError) as exc:  # a connection dropped mid-answer
        raise AttemptFailed(f"{shown}: connection lost ({_why(exc)})", retry=True) from None
    except http.client.HTTPException as exc:  # a broken answer; its text may quote the URL
        raise AttemptFailed(f"{shown}: broken answer ({type(exc).__name__})", retry=True) from None
    if not 200 <= status < 300:
        raise AttemptFailed(f"{shown} answered HTTP {status}", retry=False)
    return status


def _why(reason: object) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason) or type(reason).__name__


def send_mail(
    mail: EmailMessage,
    *,
    host: str,
    port: int,
    user: str | None,
    password: str | None,
    timeout: float,
    ca_bundle: Path | None,
) -> int:
    """Submit ``mail`` over STARTTLS (required: the password never crosses in clear); 250 or
    ``AttemptFailed``. A 4xx from the relay is worth another try, a 5xx is not."""
    shown = f"smtp://{host}:{port}"
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as smtp:
            smtp.ehlo()
            if not smtp.has_extn("starttls"):
                raise AttemptFailed(
                    f"{shown} does not offer STARTTLS; analyzer never sends mail or a password "
                    "in clear: point --notify-smtp at the relay's submission port",
                    retry=False,
                )
            smtp.starttls(context=tls_context(ca_bundle))
            smtp.ehlo()
            if user is not None and password is not None:
                _login(smtp, user, password)
            refused = smtp.send_message(mail)
            if refused:
                # Some recipients were refused: the others got it; a retry would double theirs.
                raise AttemptFailed(
                    f"{shown} refused {len(refused)} recipient(s): {', '.join(sorted(refused))}",
                    retry=False,
                )
    except AttemptFailed:
        raise
    except smtplib.SMTPAuthenticationError as exc:
        raise AttemptFailed(
            f"{shown} refused the login of {user} ({exc.smtp_code}); check "
            "--notify-smtp-user and the password's variable or file",
            retry=False,
        ) from None
    except smtplib.SMTPResponseException as exc:
        code = exc.smtp_code
        raise AttemptFailed(
            f"{shown} answered {code} {_smtp_text(exc.smtp_error)}", retry=400 <= code < 500
        ) from None
    except smtplib.SMTPNotSupportedError:
        raise AttemptFailed(
            f"{shown} offers no login method analyzer can use; drop --notify-smtp-user if the "
            "relay takes mail without a login",
            retry=False,
        ) from None
    except smtplib.SMTPRecipientsRefused as exc:
        raise AttemptFailed(
            f"{shown} refused every recipient ({', '.join(sorted(exc.recipients))})",
            retry=all(400 <= code < 500 for code, _ in exc.recipients.values()),
        ) from None
    except ssl.SSLCertVerificationError as exc:
        raise AttemptFailed(
            f"{shown}: TLS certificate not trusted ({exc.verify_message}); pass "
            "--notify-ca-bundle with the relay's CA",
            retry=False,
        ) from None
    except (smtplib.SMTPException, OSError) as exc:
        # Dropped connections, timeouts, refused connections: worth another try.
        raise AttemptFailed(f"cannot deliver to {shown} ({_why(exc)})", retry=True) from None
    return 250


def _login(smtp: smtplib.SMTP, user: str, password: str) -> None:
    """AUTH PLAIN when offered (inside TLS it is the standard one), else smtplib's choice.

    ``smtplib.login`` walks down every mechanism after a refusal, and a relay may hang up on the
    second attempt, hiding the 535 that says what is wrong."""
    offered = str(smtp.esmtp_features.get("auth", "")).upper().split()
    if "PLAIN" in offered:
        smtp.user, smtp.password = user, password
        smtp.auth("PLAIN", smtp.auth_plain)
    else:
        smtp.login(user, password)


def _smtp_text(raw: bytes | str) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return " ".join(text.split())[:200]
