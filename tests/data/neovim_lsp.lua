-- Neovim's own LSP client on `gradshard lsp` (tests/test_lsp_neovim.py runs it headless):
-- open derivatives.yaml, break sin's formula, wait for the diagnostics, hover on the formula,
-- and write what Neovim holds as JSON. Neovim 0.7's API (Debian 12's): start_client and
-- buf_attach_client (vim.lsp.start came in 0.8).
local spec_file = os.getenv("GRADSHARD_NVIM_FILE")
local out_file = os.getenv("GRADSHARD_NVIM_OUT")
local command = vim.fn.json_decode(os.getenv("GRADSHARD_NVIM_COMMAND"))
local report = {}

local function finish()
  local out = io.open(out_file, "w")
  out:write(vim.fn.json_encode(report))
  out:close()
  vim.lsp.stop_client(vim.lsp.get_active_clients())
  vim.wait(10000, function() return #vim.lsp.get_active_clients() == 0 end, 50)
  vim.cmd("qa!")
end

local ok, failure = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(spec_file))
  local buffer = vim.api.nvim_get_current_buf()
  local id = vim.lsp.start_client({ name = "gradshard", cmd = command,
                                    root_dir = vim.fn.fnamemodify(spec_file, ":h") })
  vim.lsp.buf_attach_client(buffer, id)
  report.initialized = vim.wait(120000, function()
    local client = vim.lsp.get_client_by_id(id)
    return client ~= nil and client.initialized
  end, 50)
  local row
  for number, line in ipairs(vim.api.nvim_buf_get_lines(buffer, 0, -1, false)) do
    if line == "  self: grad * self.cos().conj()" and row == nil then row = number - 1 end
  end
  report.row = row
  vim.api.nvim_buf_set_lines(buffer, row, row + 1, false, { "  self: grad * sef.cos().conj()" })
  report.diagnosed = vim.wait(120000, function() return #vim.diagnostic.get(buffer) > 0 end, 20)
  report.diagnostics = {}
  for _, found in ipairs(vim.diagnostic.get(buffer)) do
    table.insert(report.diagnostics, { lnum = found.lnum, col = found.col,
      end_col = found.end_col, message = found.message, source = found.source,
      severity = found.severity })
  end
  local answers = vim.lsp.buf_request_sync(buffer, "textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(buffer) },
    position = { line = row, character = 10 } }, 120000)
  for _, answer in pairs(answers or {}) do
    if answer.result ~= nil then report.hover = answer.result.contents.value end
  end
  vim.api.nvim_buf_set_lines(buffer, row, row + 1, false, { "  self: grad * self.cos().conj()" })
  report.cleared = vim.wait(120000, function() return #vim.diagnostic.get(buffer) == 0 end, 20)
end)
if not ok then report.error = tostring(failure) end
finish()
