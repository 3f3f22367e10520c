"""What links and devices should give: PCIe and NVLink rates, bandwidth plateaus, the expected figure of a
measurement. Read by rules, importers, bench and the advisor alike; imports only the facts model and the catalog."""
