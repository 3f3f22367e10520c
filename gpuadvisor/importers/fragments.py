"""Regular-expression fragments the readers compose into their patterns, each written once.

A PCI bus id as the tools print it: NVML and nvidia-smi ``00000000:18:00.0`` (an 8-digit domain), lspci -D and
the kernel ``0000:18:00.0`` (4 digits; lspci without -D and some tools drop the domain: ``18:00.0``), and tools that
leave the function off (nvbandwidth's ``00000000:8f:00``, nccl-tests' ``0000:1b:00``). A UUID: the 8-4-4-4-12 hex
groups of RFC 9562 that NVML's GPU and MIG UUIDs follow ``GPU-`` or ``MIG-`` with. None holds a capturing group:
a pattern's groups stay where its own parentheses put them.
"""

from __future__ import annotations

HEX = "[0-9A-Fa-f]"
PCI_DOMAIN = rf"{HEX}{{4,8}}:"  # "0000:" (lspci -D, the kernel) or "00000000:" (NVML)
PCI_BUS_DEVICE = rf"{HEX}{{2}}:{HEX}{{2}}"  # "18:00"
PCI_FUNCTION = r"\.[0-7]"  # ".0"
PCI_BUS_ID = PCI_DOMAIN + PCI_BUS_DEVICE + PCI_FUNCTION  # "00000000:18:00.0"
PCI_BUS_ID_ANY_DOMAIN = f"(?:{PCI_DOMAIN})?{PCI_BUS_DEVICE}{PCI_FUNCTION}"  # also "18:00.0"
PCI_BUS_ID_NO_FUNCTION = PCI_DOMAIN + PCI_BUS_DEVICE  # "00000000:8f:00"
LSPCI_BUS_ID = rf"(?:{HEX}{{4}}:)?{PCI_BUS_DEVICE}{PCI_FUNCTION}"  # lspci's "0000:18:00.0" (-D) or "18:00.0"
PCI_BUS_ID_LOOSE = r"[0-9a-fA-F:.]{7,16}"  # any of these in a log's words, normalised where it is read
UUID_BODY = rf"{HEX}{{8}}(?:-{HEX}{{4}}){{3}}-{HEX}{{12}}"  # "8e4d4f16-1b8f-2e0f-7ae3-2f8a4ad4c4f8"
# A syslog or journal time (rsyslog's traditional form, journalctl's short and short-precise forms: the month's
# abbreviated name as the locale writes it, the day, the clock): "Jul 21 14:47:28", "juil. 21 14:47:28",
# "Июл 21 14:47:28", or the month's number and the locale's month sign (zh_CN and ja_JP "7月", ko_KR "7월": "7月 21
# 14:47:28"), "May 31, 05:33:40.123456"
SYSLOG_MONTH = r"(?:[^\W\d_]{2,6}\.?|\d{1,2}\s?[月월])"
SYSLOG_TIME = SYSLOG_MONTH + r"\s+\d{1,2},?\s+\d\d:\d\d:\d\d(?:[.,]\d{1,9})?"
