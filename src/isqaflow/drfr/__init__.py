"""InFoBench DRFR: responses, the multi-turn YES/NO judge and aggregation."""
