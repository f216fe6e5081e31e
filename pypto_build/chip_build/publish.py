"""Publishing an output folder so that a kill at any instant leaves it as it was or as the new
build made it, never missing and never half-written.

Every build and render writes its whole output into a staging sibling of the output folder
(``.<name>.<random>.new``) and then swaps the two with one ``renameat2(RENAME_EXCHANGE)``: at
every instant the output folder's name points at a complete tree, the old one or the new one.
The old tree, now in the staging name, is removed afterwards. Where the kernel or file system
cannot exchange, the old tree is first renamed aside (``.<name>.<random>.old``) and the new one
renamed into place; a kill between the two leaves the old tree aside, and the next build puts it
back before doing anything else.

A build holds the output folder's lock (``.<name>.lock``, beside it, removed on release) from
before it looks at the folder until the swap is done, so two builds into one folder never
interleave: the second waits for the first, saying so, then replaces its output whole. Holding
the lock, a build removes what killed builds left: their staging folders (``.new``), the trees
they set aside (``.old``) once the folder is back, and their lock file when it releases its own.
Those names are the only debris a build can leave (:func:`debris`), which is what a wheel must
never ship and what a project's ignore file lists.

Tests stop a build at every step of this sequence: :data:`KILL_AT_ENV` names a step of
:data:`STEPS` at which the process kills itself with SIGKILL, and :data:`NO_EXCHANGE_ENV` makes
it take the rename-aside path. Nothing else reads them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import fnmatch
import os
import signal
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from pypto_build.errors import PyptoOSError
from pypto_build.files import remove_entry

#: The steps of a publish, in order (``rendered`` and ``compiled`` are the engine's, between
#: ``staged`` and ``swapping``; ``moved-aside`` happens only without an exchange).
STEPS = (
    "locked",
    "debris-removed",
    "staged",
    "rendered",
    "compiled",
    "swapping",
    "moved-aside",
    "swapped",
    "old-removed",
)
#: Test hook: the step at which the process kills itself (SIGKILL), to prove each is survivable.
KILL_AT_ENV = "PYPTO_BUILD_TEST_KILL_AT"
#: Test hook: publish by renaming the old tree aside, as where the exchange is not available.
NO_EXCHANGE_ENV = "PYPTO_BUILD_TEST_NO_EXCHANGE"

_STAGING_SUFFIX = ".new"
_ASIDE_SUFFIX = ".old"
_LOCK_SUFFIX = ".lock"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class PublishError(PyptoOSError):
    """The output folder cannot be created, locked or replaced; the message names it."""


def step(name: str) -> None:
    """Mark reaching publish step ``name`` (one of :data:`STEPS`): the test hook's kill point."""
    if os.environ.get(KILL_AT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def debris(target: Path) -> tuple[str, ...]:
    """Glob patterns, relative to ``target``'s parent, of every name a build of ``target``
    creates beside it: its lock, and the staging and set-aside folders of killed builds."""
    prefix = f".{target.name}."
    return (
        f"{prefix}*{_STAGING_SUFFIX}",
        f"{prefix}*{_ASIDE_SUFFIX}",
        f".{target.name}{_LOCK_SUFFIX}",
    )


@contextlib.contextmanager
def replacing(
    target: Path,
    *,
    check: Callable[[Path], None] = lambda _: None,
    notify: Callable[[str], None] | None = None,
) -> Iterator[Path]:
    """A staging folder that replaces ``target`` whole when the ``with`` block ends normally.

    Under ``target``'s lock: debris of killed builds is removed (a tree a killed build set
    aside is put back first), then ``check(target)`` may refuse the folder (raising), then the
    block fills the staging folder. An exception in the block removes the staging folder and
    leaves ``target`` as it was. ``notify`` hears that the build waits for another one (default:
    a line on standard error).
    """
    # Absolute and normalized, so that "out/" and "." have a name and a parent to stage beside.
    folder = Path(os.path.abspath(target))
    with _locked(folder, notify or _tell):
        step("locked")
        remove_debris(folder)
        step("debris-removed")
        check(target)
        staging = _new_staging(folder)
        step("staged")
        try:
            yield staging
            step("swapping")
            _keep_mode(folder, staging)
            _swap(staging, folder)
        except BaseException:
            remove_entry(staging)
            raise


def clear_debris(target: Path, *, notify: Callable[[str], None] | None = None) -> None:
    """Take ``target``'s lock and :func:`remove_debris` (for a packer about to ship the folder
    that holds ``target``: a killed build's staging folder must not travel with it).

    Nothing is locked when no name of :func:`debris` is there: a build holds its lock file from
    before it writes anything until it is done, so without one no build is running, and
    without its staging or set-aside folders none was killed."""
    try:
        names = os.listdir(target.parent)
    except OSError:
        return
    patterns = debris(target)
    if not any(fnmatch.fnmatchcase(name, pattern) for name in names for pattern in patterns):
        return
    with _locked(target, notify or _tell):
        remove_debris(target)


def remove_debris(target: Path) -> None:
    """Put back a tree a killed build set aside (when ``target`` is missing), then remove every
    staging and set-aside folder a build of ``target`` left. Call it holding the lock."""
    parent = target.parent
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return
    prefix = f".{target.name}."
    aside = [
        parent / name for name in names if name.startswith(prefix) and name.endswith(_ASIDE_SUFFIX)
    ]
    if not os.path.lexists(target):
        for folder in aside:
            with contextlib.suppress(OSError):
                os.rename(folder / target.name, target)
                break
    for name in names:
        if name.startswith(prefix) and name.endswith((_STAGING_SUFFIX, _ASIDE_SUFFIX)):
            remove_entry(parent / name)


def _tell(message: str) -> None:
    print(f"pypto-build: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _locked(target: Path, notify: Callable[[str], None]) -> Iterator[None]:
    """Hold ``target``'s lock file (created beside it, never through a link, and removed when
    released, so a finished build leaves nothing beside its output).

    Removing a lock file is safe with one rule: a process that got the lock checks that the
    path still names the file it locked, and starts over when an earlier holder removed it.
    """
    lock = target.parent / f".{target.name}{_LOCK_SUFFIX}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot_create(target, exc) from None
    waited = False
    while True:
        fd = _open_lock(lock, target)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not waited:
                    notify(f"waiting for another build into {target} to finish")
                    waited = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_file(fd, lock):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def _open_lock(lock: Path, target: Path) -> int:
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise _cannot_create(target, exc) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PublishError(errno.EINVAL, f"{lock} is not a regular file")
    return fd


def _cannot_create(target: Path, exc: OSError) -> PublishError:
    """Why ``target`` cannot be made, naming the path at fault: a regular file standing where
    a folder of the way must be is the common mistake (``--out build.log/x``)."""
    for ancestor in target.parents:
        if os.path.lexists(ancestor):
            if not ancestor.is_dir():
                return PublishError(
                    exc.errno,
                    f"cannot create the output folder {target}: {ancestor} is not a folder",
                )
            break
    return PublishError(exc.errno, f"cannot create the output folder {target}: {exc.strerror}")


def _same_file(fd: int, path: Path) -> bool:
    try:
        named = os.lstat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _keep_mode(target: Path, staging: Path) -> None:
    """Give ``staging`` the mode of the folder it replaces, when there is one: the output folder
    is the user's (``--out`` on a private folder of mode 700 stays private); only the trees in
    it have fixed modes."""
    with contextlib.suppress(FileNotFoundError):
        present = os.lstat(target)
        if stat.S_ISDIR(present.st_mode):
            os.chmod(staging, stat.S_IMODE(present.st_mode))


def _new_staging(target: Path) -> Path:
    try:
        return Path(
            tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=_STAGING_SUFFIX)
        )
    except OSError as exc:
        raise PublishError(
            exc.errno, f"cannot write beside the output folder {target}: {exc.strerror}"
        ) from None


def _swap(staging: Path, target: Path) -> None:
    """Make ``staging`` the folder at ``target``; the old one, if any, is removed."""
    if not os.path.lexists(target):
        os.rename(staging, target)
        step("swapped")
        step("old-removed")
        return
    if _exchange(staging, target):
        step("swapped")  # staging now holds the old tree
        remove_entry(staging)
        step("old-removed")
        return
    aside = Path(
        tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=_ASIDE_SUFFIX)
    )
    os.rename(target, aside / target.name)
    step("moved-aside")
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(aside / target.name, target)
        raise
    step("swapped")
    remove_entry(aside)
    step("old-removed")


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2``); False where that is not available."""
    if os.environ.get(NO_EXCHANGE_ENV):
        return False
    import ctypes  # only to publish: a packer that clears debris must not pay for it

    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(second))
