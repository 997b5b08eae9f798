"""Importing from the TUI (`i`): the same importers and the same report as `ccs import`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ccswitch_tui.tui.screens.importing import ImportChoice
    from ccswitch_tui.tui.service import Service


class ImportMixin:
    """Mixed into CcsApp; relies on its ``service``, ``push_screen``, ``_run`` and ``load_profiles``."""

    service: Service

    def action_import_profiles(self) -> None:
        from ccswitch_tui.importers.sources import default_sources
        from ccswitch_tui.tui.screens.importing import ImportScreen

        sources = default_sources(self.service.environ)
        self.push_screen(ImportScreen(sources), lambda choice: self._import(sources, choice))  # type: ignore[attr-defined]

    def _import(self, sources: list[Any], choice: ImportChoice | None) -> None:
        if choice is None:
            return
        source = next(s for s in sources if s.kind == choice.kind)

        def shown(report: Any) -> None:
            from ccswitch_tui.tui.screens.importing import ReportScreen

            what = "Preview (dry run)" if choice.dry_run else "Imported"
            if not choice.dry_run:
                self.load_profiles(self.selected)  # type: ignore[attr-defined]
            self.push_screen(  # type: ignore[attr-defined]
                ReportScreen(f"{what}: {source.label}", report.render(), choice.dry_run),
                lambda again: again and self._import(sources, replace_choice(choice)))

        def waiting(line: str) -> None:  # from the worker: another import holds the lock
            self.call_from_thread(self.notify, line, title="Import")  # type: ignore[attr-defined]

        self._run("Import", self.service.import_from, source, choice.dry_run, waiting,  # type: ignore[attr-defined]
                  done=lambda report: self.call_from_thread(shown, report))  # type: ignore[attr-defined]


def replace_choice(choice: ImportChoice) -> ImportChoice:
    from dataclasses import replace

    return replace(choice, dry_run=False)

