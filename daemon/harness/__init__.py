"""The agent harness: BrowserGym action strings parsed (``actions``) and run by bid in a
real page through Playwright (``playwright_env``)."""
