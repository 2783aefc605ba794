"""Seed 003's findings ("Análisis del sistema de archivos JFS vs XFS", Spanish, 2007), read line by
line, each with the claims that check it or why it is not measurable here
(harness/suites/seed_findings.py says what counts as a finding). Its `time` and dd outputs are one
finding each (a run of one command on one filesystem)."""

from __future__ import annotations

from harness.suites.claim import ONE_KERNEL, Finding

CP = ("s3-jfs-xfs-cp", "s3-seed003-cp-user", "s3-seed003-cp-system")
RM = ("s3-jfs-xfs-rm", "s3-seed003-rm-user", "s3-seed003-rm-system")
CREAR = ("s4-crear-time", "s4-crear-jfs-2x")


def _dd(fs: str, mb: int, line: str, faster: str | None) -> Finding:
    claims = (f"s4-dd-{fs}",) + ((faster,) if faster else ())
    return Finding("003", f"crear output, {fs.upper()}, dd of {mb} MB", line, f"dd of {mb} MB on {fs.upper()}",
                   claims=claims, note="" if faster else "no direction claim at 100 MB: the two rates are 2 % apart")


FINDINGS = (
    Finding("003", "update note", "A pesar de que en benchmarks el JFS es algo más rápido",
            "in benchmarks JFS is somewhat faster", claims=("s3-jfs-xfs-cp", "s3-jfs-xfs-rm"),
            note="faster at cp and rm of the tree; slower at creating large files (s4-crear-jfs-2x)"),
    Finding("003", "update note", "es más inestable con el tiempo", "JFS is more unstable over time",
            why="aging over months of use is not simulated"),
    Finding("003", "update note", "sus utilidades de recuperación (fsck.jfs) no recuperan de todos los errores del "
                                  "sistema",
            "fsck.jfs does not recover from every error", claims=("pl-jfs-needs-repair",)),
    Finding("003", "update note", "llegará el momento que no puedas montar la partición",
            "the time will come when the partition no longer mounts (fsck.jfs: 'CANNOT CONTINUE')",
            claims=("pl-jfs-cannot-continue",)),
    Finding("003", "introduction", "ya me sorprendió por su velocidad al iniciar el sistema",
            "JFS surprised the author by its boot speed", why="booting from the filesystem under test is not measured"),
    Finding("003", "hardware", "el primero puede estar algo fragmentado",
            "the JFS disk may be slightly fragmented (2 %)", why="fslab's filesystems are made fresh for every run"),
    Finding("003", "hdparm -tT", "el sdb es un 11,5% más rápido", "sdb (JFS) is 11.5 % faster",
            claims=("s3-hdparm-buffered",),
            note="restated under 'Hardware' ('el disco con JFS sea algo más rápido') and in the conclusion (the XFS "
                 "disk 'es algo más lento')"),
    Finding("003", "hdparm -tT /dev/sdb (JFS)", "Timing cached reads: 470 MB in 2.01 seconds = 234.34 MB/sec",
            "the JFS disk: cached reads 234.34 MB/s (buffered 77.57 MB/s)",
            claims=("s3-hdparm-cached", "s3-hdparm-buffered")),
    Finding("003", "hdparm -tT /dev/sda (XFS)", "Timing cached reads: 472 MB in 2.00 seconds = 235.43 MB/sec",
            "the XFS disk: cached reads 235.43 MB/s (buffered 68.57 MB/s)",
            claims=("s3-hdparm-cached", "s3-hdparm-buffered")),
    Finding("003", "cp -R of the kernel tree, XFS", "2.00user 47.88system 6:24.75elapsed 12%CPU",
            "cp -R on XFS: 2.00 s user, 47.88 s system, 6:24.75 elapsed", claims=CP),
    Finding("003", "cp -R of the kernel tree, JFS", "1.60user 41.59system 2:59.92elapsed 24%CPU",
            "cp -R on JFS: 1.60 s user, 41.59 s system, 2:59.92 elapsed", claims=CP),
    Finding("003", "rm -rf of the kernel tree, XFS", "0.25user 12.00system 2:24.49elapsed 8%CPU",
            "rm -rf on XFS: 0.25 s user, 12.00 s system, 2:24.49 elapsed", claims=RM),
    Finding("003", "rm -rf of the kernel tree, JFS", "0.08user 3.99system 0:51.70elapsed 7%CPU",
            "rm -rf on JFS: 0.08 s user, 3.99 s system, 0:51.70 elapsed", claims=RM),
    _dd("xfs", 1, "1048576 bytes (1,0 MB) copiados, 0,00367756 segundos, 285 MB/s", "s4-dd-1mb-xfs-faster"),
    _dd("xfs", 10, "10485760 bytes (10 MB) copiados, 0,0763831 segundos, 137 MB/s", "s4-dd-10mb-jfs-faster"),
    _dd("xfs", 100, "104857600 bytes (105 MB) copiados, 0,464523 segundos, 226 MB/s", None),
    _dd("xfs", 250, "262144000 bytes (262 MB) copiados, 3,95784 segundos, 66,2 MB/s", "s4-dd-250mb-jfs-faster"),
    _dd("xfs", 500, "524288000 bytes (524 MB) copiados, 7,07681 segundos, 74,1 MB/s", "s4-dd-500mb-xfs-faster"),
    Finding("003", "time ./crear, XFS", "0.05user 2.38system 0:11.91elapsed 20%CPU",
            "./crear on XFS: 0.05 s user, 2.38 s system, 11.91 s elapsed", claims=CREAR),
    _dd("jfs", 1, "1048576 bytes (1,0 MB) copiados, 0,108979 segundos, 9,6 MB/s", "s4-dd-1mb-xfs-faster"),
    _dd("jfs", 10, "10485760 bytes (10 MB) copiados, 0,0557353 segundos, 188 MB/s", "s4-dd-10mb-jfs-faster"),
    _dd("jfs", 100, "104857600 bytes (105 MB) copiados, 0,474631 segundos, 221 MB/s", None),
    _dd("jfs", 250, "262144000 bytes (262 MB) copiados, 1,20296 segundos, 218 MB/s", "s4-dd-250mb-jfs-faster"),
    _dd("jfs", 500, "524288000 bytes (524 MB) copiados, 19,5337 segundos, 26,8 MB/s", "s4-dd-500mb-xfs-faster"),
    Finding("003", "time ./crear, JFS", "0.04user 3.33system 0:21.45elapsed 15%CPU",
            "./crear on JFS: 0.04 s user, 3.33 s system, 21.45 s elapsed", claims=CREAR),
    Finding("003", "summary table", "XFS (SDA) 12% FASTER", "the summary table's heading: 'XFS (SDA) 12% FASTER'",
            why="it contradicts the times beside it (XFS slower at cp and rm, faster only at ./crear) and the hdparm "
                "figures (the XFS disk the slower); most likely the CPU column's 12 % run into the heading"),
    Finding("003", "conclusion", "gana el sistema JFS de forma aplastante en cuanto a la lectura/borrado de archivos "
                                 "pequeños",
            "JFS wins crushingly at reading/deleting small files", claims=("s3-jfs-xfs-cp", "s3-jfs-xfs-rm")),
    Finding("003", "conclusion", "la diferencia de 4 minutos en copiar el kernel es increíble",
            "the 4-minute difference in copying the kernel is incredible", claims=("s3-jfs-xfs-cp",)),
    Finding("003", "conclusion", "en la creación de archivos grandes tarda el doble",
            "JFS takes twice as long to create large files", claims=("s4-crear-jfs-2x",)),
    Finding("003", "conclusion", "en kernels linux recientes se ha mejorado la velocidad del sistema XFS",
            "recent kernels made XFS faster, which would narrow these differences",
            why=ONE_KERNEL),
    Finding("003", "conclusion", "no ha sido bien testeado a la hora de recuperarse ante un fallo de alimentación",
            "JFS is not well tested at recovering from a power failure",
            claims=("pl-jfs-needs-repair", "pl-jfs-cannot-continue")),
    Finding("003", "conclusion", "Aunque el XFS también tiene algún que otro fallo",
            "XFS has its faults too (see its mailing lists)", why="no measure or number"),
    Finding("003", "conclusion", "el sistema más probado es el EXT3 (y también el más lento de los 3 sistemas "
                                 "mencionados)",
            "ext3 is the most proven and also the slowest of the three",
            why="the seed measured no ext3, and study S3's vmconfig has none: nothing to compare with"),
)
