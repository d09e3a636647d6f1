"""Counts of the web family's worlds, for ``rollgym list --stats``."""

from __future__ import annotations


def web_stats() -> dict[str, int]:
    """Sites and templates of the web envs: hand-written, generated, and generated per split.

    ``train``, ``validation`` and ``test`` play on the training sites; ``test_unseen`` on the
    held-out ones. A split's templates are those with at least one site in it.

    Example:
        >>> counts = web_stats()
        >>> counts["generated_sites"] == counts["sites_train"] + counts["sites_test_unseen"] >= 100
        True
    """
    from rollgym.envs.web.gen.domain import site_keys, site_spec
    from rollgym.envs.web.gen.kinds import KINDS
    from rollgym.envs.web.gen.tasks import GEN_SPLITS, count_templates, split_sites
    from rollgym.envs.web.gen.themes import HELDOUT_THEMES, TRAIN_THEMES
    from rollgym.envs.web.sites import SITES
    from rollgym.envs.web.tasks import TEMPLATES

    counts = count_templates()
    out = {
        "hand_written_sites": len(SITES),
        "hand_written_templates": len(TEMPLATES),
        "generated_sites": sum(len(site_keys(k, held_out)) for k in KINDS for held_out in (False, True)),
        "generated_templates": counts["templates"],
    }
    for split in GEN_SPLITS:
        keys = split_sites(split, tuple(KINDS))
        kinds = {site_spec(key).kind.key for key in keys}
        out[f"sites_{split}"] = len(keys)
        out[f"templates_{split}"] = sum(len(KINDS[k].templates) for k in kinds)
    out |= {
        "site_kinds": len(KINDS),
        "layout_themes": len(TRAIN_THEMES) + len(HELDOUT_THEMES),
        "layout_themes_held_out": len(HELDOUT_THEMES),
        "generated_templates_info": counts["info"],
        "generated_templates_transaction": counts["transaction"],
        "task_mechanisms": counts["mechanisms"],
    }
    return out
