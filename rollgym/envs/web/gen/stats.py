"""Counts of the web family's worlds, for ``rollgym list --stats``."""

from __future__ import annotations


def web_stats() -> dict[str, int]:
    """Sites, kinds, themes and templates of the web envs (hand-written and generated).

    Example:
        >>> web_stats()["generated_sites"] >= 100
        True
    """
    from rollgym.envs.web.gen.domain import site_keys
    from rollgym.envs.web.gen.kinds import KINDS
    from rollgym.envs.web.gen.tasks import count_templates
    from rollgym.envs.web.gen.themes import HELDOUT_THEMES, TRAIN_THEMES
    from rollgym.envs.web.sites import SITES
    from rollgym.envs.web.tasks import TEMPLATES

    train = sum(len(site_keys(k, False)) for k in KINDS)
    heldout = sum(len(site_keys(k, True)) for k in KINDS)
    counts = count_templates()
    return {
        "hand_written_sites": len(SITES),
        "hand_written_templates": len(TEMPLATES),
        "generated_sites": train + heldout,
        "generated_sites_train": train,
        "generated_sites_test_unseen": heldout,
        "site_kinds": len(KINDS),
        "layout_themes": len(TRAIN_THEMES) + len(HELDOUT_THEMES),
        "layout_themes_held_out": len(HELDOUT_THEMES),
        "generated_templates": counts["templates"],
        "generated_templates_info": counts["info"],
        "generated_templates_transaction": counts["transaction"],
        "task_mechanisms": counts["mechanisms"],
    }
