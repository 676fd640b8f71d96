"""`[tool.gradshard]` in the nearest pyproject.toml (or a gradshard.toml): the settings a
command takes from a file, below the environment and the flags (files.py finds and checks
the file, settings.py lists its keys, effective.py applies them and says where each value
came from)."""

from gradshard.service.config.effective import Effective, applied_config, effective_settings
from gradshard.service.config.files import ConfigFile, file_digest, find_config, read_config
from gradshard.service.config.settings import SETTINGS, Setting

__all__ = ["ConfigFile", "Effective", "SETTINGS", "Setting", "applied_config",
           "effective_settings", "file_digest", "find_config", "read_config"]
