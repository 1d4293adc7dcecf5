"""An ``.FCStd`` file's zip archive, opened defensively: member names (no absolute paths, no
``..``), sizes, counts and compression ratios (zip bombs) are checked before anything is read.
Used by :mod:`.fcstd` and by :mod:`cadmotion.plugin.freecad.fcstd_placements`."""

from __future__ import annotations

import os
import posixpath
import re
import zipfile

from ..errors import CadImportError

__all__ = ["Archive", "MAX_MEMBER_BYTES", "MAX_TOTAL_BYTES", "MAX_MEMBERS", "MAX_COMPRESSION_RATIO"]

MAX_MEMBER_BYTES = 512 * 2**20     #: largest single member accepted, bytes
MAX_TOTAL_BYTES = 2 * 2**30        #: largest total uncompressed size, bytes
MAX_MEMBERS = 200_000              #: most members in the archive
MAX_COMPRESSION_RATIO = 200.0      #: uncompressed/compressed above this is a zip bomb ...
_RATIO_MIN_BYTES = 2**20           #: ... for members of at least this size


def _safe_member_name(name):
    if not name or "\x00" in name or name.startswith(("/", "\\")) or "\\" in name:
        return False
    if re.match(r"^[A-Za-z]:", name):
        return False
    parts = name.split("/")
    return ".." not in parts and posixpath.normpath(name) == name.rstrip("/")


class Archive:
    """A checked FCStd zip: names, sizes and ratios are validated before anything is read."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.name = os.path.basename(self.path)
        try:
            self.zip = zipfile.ZipFile(self.path)
        except FileNotFoundError:
            raise CadImportError("no such file", where=self.path) from None
        except (zipfile.BadZipFile, OSError) as exc:
            raise CadImportError(f"not a readable FCStd (zip) file: {exc}", where=self.path,
                                 hint="an .FCStd file is a zip archive written by FreeCAD") from None
        infos = self.zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise CadImportError(f"the archive has {len(infos)} members; more than {MAX_MEMBERS} "
                                 "is refused", where=self.path)
        total = 0
        self.members = {}
        for info in infos:
            where = f"{self.path}: member {info.filename!r}"
            if not _safe_member_name(info.filename):
                raise CadImportError("unsafe member name (absolute path or '..')", where=where,
                                     hint="the file may be malicious; FreeCAD never writes such names")
            if info.file_size > MAX_MEMBER_BYTES:
                raise CadImportError(f"the member would unpack to {info.file_size} bytes "
                                     f"(limit {MAX_MEMBER_BYTES})", where=where)
            if info.file_size >= _RATIO_MIN_BYTES and \
                    info.file_size > MAX_COMPRESSION_RATIO * max(info.compress_size, 1):
                raise CadImportError(
                    f"compression ratio {info.file_size / max(info.compress_size, 1):.0f}:1 "
                    f"exceeds {MAX_COMPRESSION_RATIO:.0f}:1 (zip bomb)", where=where)
            total += info.file_size
            if total > MAX_TOTAL_BYTES:
                raise CadImportError(f"the archive would unpack to more than {MAX_TOTAL_BYTES} bytes",
                                     where=self.path)
            self.members[info.filename] = info
        if "Document.xml" not in self.members:
            raise CadImportError("the archive has no Document.xml member", where=self.path,
                                 hint="this is not a FreeCAD document")

    def read(self, member):
        """Bytes of one member, reading no more than its declared size."""
        info = self.members.get(member)
        if info is None:
            raise CadImportError(f"the member {member!r} is missing", where=self.path)
        try:
            with self.zip.open(info) as fh:
                data = fh.read(info.file_size + 1)
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
            raise CadImportError(f"cannot unpack: {exc}", where=f"{self.path}: member {member!r}") from None
        if len(data) > info.file_size:
            raise CadImportError("the member is larger than its header says",
                                 where=f"{self.path}: member {member!r}")
        return data

    def close(self):
        """Close the archive's file."""
        self.zip.close()
