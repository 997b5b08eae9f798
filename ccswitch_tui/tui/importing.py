"""Importing from the TUI (`i`): the same importers and the same report as `ccs import`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ccswitch_tui.tui.host import Controller
from ccswitch_tui.valueclass import replace

if TYPE_CHECKING:
    from ccswitch_tui.tui.screens.importing import ImportChoice


class Importer(Controller):
    def import_profiles(self) -> None:
        from ccswitch_tui.importers.sources import default_sources  # lazy: the dialog loads when opened
        from ccswitch_tui.tui.screens.importing import ImportScreen  # lazy: the dialog loads when opened

        sources = default_sources(self.service.environ, self.service.cwd)
        self.host.open_screen(ImportScreen(sources), lambda choice: self._import(sources, choice))

    def _import(self, sources: list[Any], choice: ImportChoice | None) -> None:
        if choice is None:
            return
        source = next(s for s in sources if s.kind == choice.kind)
        if choice.path is not None:  # a file the user pointed at

            source = replace(source, path=choice.path)

        def again(import_now: bool | None) -> None:  # after a preview: its Import button
            if import_now:
                self._import(sources, replace_choice(choice))

        def shown(report: Any) -> None:
            from ccswitch_tui.tui.screens.importing import ReportScreen  # lazy: loaded with the dialog

            what = "Preview (dry run)" if choice.dry_run else "Imported"
            if not choice.dry_run:
                self.host.reload(self.host.selected)
            self.host.open_screen(ReportScreen(f"{what}: {source.label}", report.render(), choice.dry_run), again)

        def waiting(line: str) -> None:  # from the worker: another import holds the lock
            self.host.call_from_thread(self.host.notify, line, title="Import")

        self.run("Import", self.service.import_from, source, choice.dry_run, waiting, done=self.then(shown))


def replace_choice(choice: ImportChoice) -> ImportChoice:
    return replace(choice, dry_run=False)
